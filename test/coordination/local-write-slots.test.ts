// One process's write slots: an installation's writes one at a time, in the order asked, the
// next after the previous answer (and its gap); other installations never wait for it.
import { describe, expect, it } from "vitest";
import { createLocalWriteSlots } from "../../src/coordination/local-write-slots.js";
import { expectStoppedWith } from "../support/stopped.js";

/** A write the test answers (or fails) when it chooses. */
function pendingWrite(log: string[], name: string) {
  let answer!: () => void;
  let fail!: (e: Error) => void;
  const send = () => {
    log.push(`start ${name}`);
    return new Promise<string>((resolve, reject) => {
      answer = () => {
        log.push(`end ${name}`);
        resolve(name);
      };
      fail = (e) => {
        log.push(`fail ${name}`);
        reject(e);
      };
    });
  };
  return { send, answer: () => answer(), fail: (e: Error) => fail(e) };
}

const turns = () => new Promise((r) => setTimeout(r, 20));

describe("createLocalWriteSlots", () => {
  it("sends one installation's writes one at a time, in the order they were asked for", async () => {
    const slots = createLocalWriteSlots();
    const log: string[] = [];
    const [a, b, c] = ["a", "b", "c"].map((n) => pendingWrite(log, n));
    const done = [
      slots.run("7", a!.send, { gapMs: 0 }),
      slots.run("7", b!.send, { gapMs: 0 }),
      slots.run("7", c!.send, { gapMs: 0 }),
    ];
    await turns();
    expect(log).toEqual(["start a"]);
    expect(slots.held()).toEqual(["7"]);
    a!.answer();
    await turns();
    expect(log).toEqual(["start a", "end a", "start b"]);
    b!.answer();
    await turns();
    c!.answer();
    expect(await Promise.all(done)).toEqual(["a", "b", "c"]);
    expect(log).toEqual(["start a", "end a", "start b", "end b", "start c", "end c"]);
    expect(slots.held()).toEqual([]);
  });

  it("does not hold another installation's write behind one in flight", async () => {
    const slots = createLocalWriteSlots();
    const log: string[] = [];
    const slow = pendingWrite(log, "slow");
    const pending = slots.run("7", slow.send, { gapMs: 60_000 });
    await turns();
    expect(await slots.run("8", async () => "other", { gapMs: 60_000 })).toBe("other");
    expect(slots.held()).toEqual(["7"]);
    slow.answer();
    expect(await pending).toBe("slow");
  });

  it("frees the slot when a write fails", async () => {
    const slots = createLocalWriteSlots();
    const log: string[] = [];
    const a = pendingWrite(log, "a");
    const first = slots.run("7", a.send, { gapMs: 0 });
    const second = slots.run("7", async () => "b", { gapMs: 0 });
    await turns();
    a.fail(new Error("502"));
    await expect(first).rejects.toThrow("502");
    expect(await second).toBe("b");
    expect(slots.held()).toEqual([]);
  });

  it("waits the gap after the previous write was answered, not after it was sent", async () => {
    const slots = createLocalWriteSlots();
    const log: string[] = [];
    const a = pendingWrite(log, "a");
    let answeredAt = 0;
    let secondAt = 0;
    const first = slots.run("7", a.send, { gapMs: 100 });
    const second = slots.run(
      "7",
      async () => {
        secondAt = performance.now();
      },
      { gapMs: 100 },
    );
    // Longer than the gap: the second write's wait starts from this answer.
    await new Promise((r) => setTimeout(r, 150));
    expect(secondAt).toBe(0);
    answeredAt = performance.now();
    a.answer();
    await first;
    await second;
    // A lower bound only (timers never fire early by more than the clock's rounding).
    expect(secondAt - answeredAt).toBeGreaterThanOrEqual(99);
  });

  it("lets a stopped write give up its place, at once or while it waits, without taking a turn", async () => {
    let clock = 0;
    // Ten minutes between writes, on a clock the test moves: a write that waited out its turn would never finish here.
    const slots = createLocalWriteSlots(() => clock);
    const log: string[] = [];
    await slots.run("7", async () => log.push("a"), { gapMs: 600_000 });
    const work = new AbortController();
    const waiting = slots.run("7", async () => log.push("b"), { gapMs: 600_000, stops: [work.signal] });
    const behind = slots.run("7", async () => log.push("c"), { gapMs: 600_000, stops: [work.signal] });
    await turns();
    work.abort(new Error("delivery cancelled"));
    for (const refused of [waiting, behind]) {
      await expectStoppedWith(refused, "delivery cancelled");
    }
    // Already stopped: refused before anything else.
    await expect(slots.run("8", async () => log.push("d"), { gapMs: 600_000, stops: [work.signal] })).rejects.toThrow(
      /stopped/,
    );
    // The refused writes took no turn: the next live one goes when a's gap is over, not later.
    clock = 600_000;
    await slots.run("7", async () => log.push("e"), { gapMs: 600_000 });
    expect(log).toEqual(["a", "e"]);
  });
});
