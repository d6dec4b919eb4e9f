import { afterEach, describe, expect, it, vi } from "vitest";
import { BodyAdmission, peerKey } from "../../src/intake/admission.js";

describe("peerKey", () => {
  it("counts an IPv4 address (mapped or not) as itself and an IPv6 address by its /64", () => {
    expect(peerKey("192.0.2.7")).toBe("192.0.2.7");
    expect(peerKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(peerKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(peerKey("2001:0db8:0001:0002:ffff:1:2:3")).toBe("2001:db8:1:2::/64");
    expect(peerKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(peerKey("::1")).toBe("0:0:0:0::/64");
    expect(peerKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(peerKey(undefined)).toBe("unknown");
  });
});

describe("BodyAdmission", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("charges received bytes, caps each peer, and takes room only from a peer holding more", () => {
    // Which body is slowest is bytes over time read: the clock moves only where the test says, so a
    // pause of the machine between two admissions cannot change which one that is.
    vi.useFakeTimers({ toFake: ["performance"] });
    const admission = new BodyAdmission({ maxBytes: 1_000, maxBodies: 3, maxBytesPerPeer: 600, maxBodiesPerPeer: 2 });
    const cut = new Set<string>();
    const a1 = admission.admit("10.0.0.1")!;
    const a2 = admission.admit("10.0.0.1")!;
    a1.onEvict(() => cut.add("a1"));
    a2.onEvict(() => cut.add("a2"));
    expect(admission.admit("10.0.0.1")).toBeUndefined();
    expect(a1.charge(400)).toBe(true);
    expect(a2.charge(300)).toBe(false); // over the peer's 600
    expect(a2.charge(200)).toBe(true);
    vi.advanceTimersByTime(100);
    const b = admission.admit("10.0.0.2")!;
    // The places are spent (3): a fourth peer takes one from 10.0.0.1, which has two.
    const c = admission.admit("10.0.0.3")!;
    expect(c).toBeDefined();
    // The slower of its two bodies (fewer bytes a second) is the one cut off.
    expect([...cut]).toEqual(["a2"]);
    expect(b.charge(300)).toBe(true);
    expect(admission.admit("10.0.0.4")).toBeUndefined(); // no peer has two bodies being read any more
    b.complete(); // arrived whole: its bytes stay charged, and it can no longer be cut off
    expect(admission.inFlight).toEqual({ bytes: 700, bodies: 2, peers: 3 });
    // 301 bytes do not fit: 10.0.0.3 takes them from 10.0.0.1, which holds more (400) even then.
    expect(c.charge(301)).toBe(true);
    expect([...cut]).toEqual(["a2", "a1"]);
    // Now 10.0.0.3 holds more than anyone still arriving: no room is taken for it.
    const d = admission.admit("10.0.0.4")!;
    expect(d.charge(200)).toBe(true);
    // Neither may take from the other now: each would end up holding as much as the other or more.
    expect(c.charge(299)).toBe(false);
    expect(d.charge(100)).toBe(true);
    expect(d.charge(200)).toBe(false);
    expect(admission.inFlight.bytes).toBe(901);
    d.release();
    b.release();
    c.release();
    a1.release();
    a2.release();
    expect(admission.inFlight).toEqual({ bytes: 0, bodies: 0, peers: 0 });
  });
});
