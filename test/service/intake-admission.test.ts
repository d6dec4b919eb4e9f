// Admission under attack, over real sockets: strangers on other addresses hold slow bodies,
// bodies declaring 24 MiB that never arrive, and chunked bodies that stall, for as long as the
// test runs (each reconnects when it is cut off), while a genuine sender delivers real signed
// payloads from its own address. Linux routes all of 127.0.0.0/8 to lo, so each party binds its
// own loopback source address (`localAddress`).
import { request, Agent } from "node:http";
import { connect, type Socket } from "node:net";
import { examples } from "../support/webhook-examples.js";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";
import { signBody } from "../../src/intake/signature.js";
import { appKey } from "../support/app-key.js";
import { deliveryId, startHttp, type RunningHttp } from "./helpers.js";

const SECRET = "test-secret";
const GENUINE = "127.0.0.10";
const MiB = 1024 * 1024;

/** Real payloads of every kind GitHub sends, in a fixed order. */
const PAYLOADS = (examples as { name: string; examples: unknown[] }[]).flatMap((e) =>
  e.examples.map((x) => ({ event: e.name, body: Buffer.from(JSON.stringify(x)) })),
);

let running: RunningHttp | undefined;
const attackers: Attack[] = [];
afterEach(async () => {
  for (const a of attackers.splice(0)) a.stop();
  await running?.close();
  running = undefined;
});

interface Attack {
  /** Connections opened so far (reconnections included). */
  opened(): number;
  stop(): void;
}

/**
 * `count` connections from `localAddress` that each send request headers and then feed the body
 * with `feed` (called once connected); a connection cut off is opened again after 200 ms, so the
 * attack lasts until stopped.
 */
function attack(
  port: number,
  localAddress: string,
  count: number,
  head: string,
  feed: (socket: Socket) => void,
): Attack {
  let stopped = false;
  let opened = 0;
  const sockets = new Set<Socket>();
  const open = () => {
    if (stopped) return;
    opened += 1;
    const socket = connect({ port, host: "127.0.0.1", localAddress });
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("data", () => undefined);
    socket.on("connect", () => {
      socket.write(head);
      feed(socket);
    });
    socket.on("close", () => {
      sockets.delete(socket);
      if (!stopped) setTimeout(open, 200);
    });
  };
  for (let i = 0; i < count; i++) open();
  return {
    opened: () => opened,
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

function headers(length: number | "chunked"): string {
  return (
    `POST /api/github/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n` +
    `X-GitHub-Delivery: ${deliveryId()}\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\n` +
    (length === "chunked" ? "Transfer-Encoding: chunked\r\n\r\n" : `Content-Length: ${length}\r\n\r\n`)
  );
}

/** One byte every 2 s, for as long as the socket is open. */
function trickle(socket: Socket): void {
  const timer = setInterval(() => socket.write("{"), 2_000);
  socket.once("close", () => clearInterval(timer));
}

/** A genuine signed delivery from `localAddress`: its status and how long its answer took. */
function deliver(
  port: number,
  agent: Agent,
  payload: { event: string; body: Buffer },
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/api/github/webhooks",
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": payload.body.length,
          "x-github-event": payload.event,
          "x-github-delivery": deliveryId(),
          "x-hub-signature-256": signBody(SECRET, payload.body),
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    req.on("error", () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(payload.body);
  });
}

describe("admission under attack from other addresses", () => {
  it("answers 100 genuine signed deliveries 2xx, each within 10 s, while 300 slow bodies and bodies declaring 24 MiB are held open", async () => {
    running = await startHttp({ secrets: [SECRET] });
    const port = running.port;
    // 300 bodies trickling one byte every 2 s, from six addresses (more than the 256 bodies read
    // at once in all, each address within its own share); bodies declaring 24 MiB and chunked
    // bodies that send nothing, from a seventh.
    for (let i = 2; i <= 7; i++) attackers.push(attack(port, `127.0.0.${i}`, 50, headers(1_000), trickle));
    attackers.push(attack(port, "127.0.0.8", 4, headers(24 * MiB), () => undefined));
    attackers.push(attack(port, "127.0.0.8", 4, headers("chunked"), () => undefined));
    // Every attacker connection is open and has sent its headers before the first delivery.
    let mostReading = 0;
    const sampler = setInterval(
      () => (mostReading = Math.max(mostReading, running!.surface.admission!.inFlight.bodies)),
      100,
    );
    await new Promise((r) => setTimeout(r, 1_500));

    // GitHub delivers over a few connections at once; one delivery starts every 50 ms, so the
    // deliveries span the attackers being cut off and coming back.
    const agent = new Agent({ keepAlive: true, maxSockets: 8, localAddress: GENUINE } as ConstructorParameters<
      typeof Agent
    >[0]);
    const started = performance.now();
    const results = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 50));
        return deliver(port, agent, PAYLOADS[(i * 7) % PAYLOADS.length]!);
      }),
    );
    const totalMs = performance.now() - started;
    clearInterval(sampler);
    agent.destroy();
    const opened = attackers.reduce((n, a) => n + a.opened(), 0);
    const slowest = Math.max(...results.map((r) => r.ms));
    console.log(
      `admission under attack: 100 deliveries in ${Math.round(totalMs)} ms (slowest answer ${Math.round(slowest)} ms); attacker connections opened ${opened}; most bodies being read at once ${mostReading}`,
    );
    // The attack did fill the places for bodies (256), more than two peers' shares (64 each).
    expect(mostReading).toBeGreaterThan(128);
    expect(results.filter((r) => r.status < 200 || r.status > 299).map((r) => r.status)).toEqual([]);
    expect(slowest).toBeLessThan(10_000);
    expect(running.intake.deliveries.size).toBe(100);
  }, 60_000);
});

/** Opens a connection from `localAddress`, sends `text`, and collects the answer until the server closes. */
function exchange(port: number, localAddress: string, text: string | Buffer, feed?: (socket: Socket) => void) {
  const socket = connect({ port, host: "127.0.0.1", localAddress });
  let answer = "";
  const startedAt = performance.now();
  socket.on("error", () => undefined);
  socket.on("data", (d) => (answer += d.toString("latin1")));
  socket.on("connect", () => {
    socket.write(text);
    feed?.(socket);
  });
  const closed = new Promise<{ status: number; answer: string; ms: number }>((resolve) =>
    socket.once("close", () =>
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0),
        answer,
        ms: performance.now() - startedAt,
      }),
    ),
  );
  let isClosed = false;
  socket.once("close", () => (isClosed = true));
  return { socket, closed, answered: () => answer.length > 0, isClosed: () => isClosed };
}

async function until(condition: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const KiB = 1024;
const small = PAYLOADS.find((p) => p.event === "ping") ?? PAYLOADS[0]!;

describe("the intake's admission limits", () => {
  it("refuses with 503 when real bytes exceed the global cap, taking room only from a peer holding more", async () => {
    running = await startHttp({ secrets: [SECRET], maxBodyBytes: 1 * MiB, admission: { maxBytesInFlight: 2 * MiB } });
    const port = running.port;
    const admission = running.surface.admission!;
    // Four peers each deliver 500 KiB of a 1 MiB body and stall: 2000 of the 2048 KiB are held.
    const holders = [2, 3, 4, 5].map((i) =>
      exchange(port, `127.0.0.${i}`, headers(1 * MiB), (socket) => socket.write(Buffer.alloc(500 * KiB, 0x20))),
    );
    await until(() => admission.inFlight.bytes === 4 * 500 * KiB, "the holders' bytes");
    // A fifth sends a whole 1 MiB body at once: it takes room from one holder (which holds more
    // than it), then, holding as much as each other, finds none: 503, memory never over the cap.
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, admission.inFlight.bytes)), 5);
    const big = await exchange(
      port,
      "127.0.0.6",
      Buffer.concat([Buffer.from(headers(1 * MiB)), Buffer.alloc(1 * MiB, 0x20)]),
    ).closed;
    clearInterval(sampler);
    expect(big.status).toBe(503);
    expect(big.answer.toLowerCase()).toContain("retry-after: 5");
    await until(() => holders.filter((h) => h.answered()).length === 1, "one holder to be answered");
    const evicted = await holders.find((h) => h.answered())!.closed;
    expect(evicted.status).toBe(503);
    expect(most).toBeLessThanOrEqual(2 * MiB);
    expect(admission.inFlight.bytes).toBe(3 * 500 * KiB);
    // A genuine delivery from yet another peer holds less than anyone: admitted.
    const agent = new Agent({ localAddress: "127.0.0.7" } as ConstructorParameters<typeof Agent>[0]);
    expect((await deliver(port, agent, small)).status).toBe(202);
    agent.destroy();
    for (const h of holders) h.socket.destroy();
  }, 60_000);

  it("cuts a body that trickles, or declares 24 MiB and sends nothing, soon after the grace (408), long before the body timeout", async () => {
    running = await startHttp({ secrets: [SECRET] });
    const idle = exchange(running.port, "127.0.0.2", headers(24 * MiB));
    const slow = exchange(running.port, "127.0.0.2", headers(1_000), trickle);
    const chunked = exchange(running.port, "127.0.0.2", headers("chunked"), (s) => s.write("1\r\n{\r\n"));
    for (const { closed } of [idle, slow, chunked]) {
      const r = await closed;
      expect(r.status).toBe(408);
      // The grace is 2 s, the body timeout 15 s: a bound, not a race.
      expect(r.ms).toBeLessThan(10_000);
    }
    expect(running.surface.admission!.inFlight).toEqual({ bytes: 0, bodies: 0, peers: 0 });
  }, 60_000);

  it("gives one peer at most its share of bodies being read, and of connections; other peers are served", async () => {
    // No rate floor here: the held bodies stay held for the whole test.
    running = await startHttp({
      secrets: [SECRET],
      admission: { admissionLimits: { maxBodiesPerPeer: 4 }, maxConnectionsPerPeer: 8, bodyMinRate: 0 },
    });
    const port = running.port;
    const admission = running.surface.admission!;
    const bodies = Array.from({ length: 6 }, () => exchange(port, "127.0.0.2", headers(1_000)));
    await until(() => bodies.filter((b) => b.isClosed()).length === 2, "two bodies refused");
    for (const b of bodies.filter((b) => b.isClosed())) expect((await b.closed).status).toBe(503);
    expect(admission.inFlight.bodies).toBe(4);
    // 4 connections of the peer are open: of 6 more, the 2 past its cap of 8 are closed unanswered.
    const extra = Array.from({ length: 6 }, () => exchange(port, "127.0.0.2", ""));
    await until(() => extra.filter((e) => e.isClosed()).length === 2, "two connections cut");
    for (const e of extra.filter((e) => e.isClosed())) expect((await e.closed).status).toBe(0);
    // Another peer is served meanwhile.
    const agent = new Agent({ localAddress: "127.0.0.3" } as ConstructorParameters<typeof Agent>[0]);
    expect((await deliver(port, agent, small)).status).toBe(202);
    agent.destroy();
    for (const e of [...bodies, ...extra]) e.socket.destroy();
  }, 60_000);
});

describe("connections that hold a place without a request", () => {
  it("closes a connection that sends nothing, and one idling after its answer, within the server's timeouts", async () => {
    running = await startHttp({ secrets: [SECRET], timeouts: { headersTimeoutMs: 500, keepAliveTimeoutMs: 500 } });
    const silent = exchange(running.port, "127.0.0.2", "");
    const body = small.body;
    const signed =
      `POST /api/github/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: ${small.event}\r\n` +
      `X-GitHub-Delivery: ${deliveryId()}\r\nX-Hub-Signature-256: ${signBody(SECRET, body)}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const idle = exchange(running.port, "127.0.0.3", Buffer.concat([Buffer.from(signed), body]));
    const [s, i] = await Promise.all([silent.closed, idle.closed]);
    // Bounds far above the timeouts (0.5 s), far below forever.
    expect(s.ms).toBeLessThan(10_000);
    expect(i.status).toBe(202);
    expect(i.ms).toBeLessThan(10_000);
  }, 30_000);
});

describe("admission settings", () => {
  it("reads STEWARD_BODY_MIN_RATE and STEWARD_MAX_CONNECTIONS_PER_ADDRESS, with defaults, and refuses malformed values by name", () => {
    const base = { APP_ID: "123", PRIVATE_KEY: appKey().privateKey, WEBHOOK_SECRET: "whsec-value-1" };
    expect(loadConfig(base)).toMatchObject({ bodyMinRate: 16_384, maxConnectionsPerAddress: 256 });
    expect(
      loadConfig({ ...base, STEWARD_BODY_MIN_RATE: "0", STEWARD_MAX_CONNECTIONS_PER_ADDRESS: "1000" }),
    ).toMatchObject({
      bodyMinRate: 0,
      maxConnectionsPerAddress: 1000,
    });
    expect(() => loadConfig({ ...base, STEWARD_BODY_MIN_RATE: "16KiB" })).toThrow(/STEWARD_BODY_MIN_RATE/);
    expect(() => loadConfig({ ...base, STEWARD_MAX_CONNECTIONS_PER_ADDRESS: "-1" })).toThrow(
      /STEWARD_MAX_CONNECTIONS_PER_ADDRESS/,
    );
  });
});
