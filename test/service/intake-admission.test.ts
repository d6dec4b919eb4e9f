// Admission under attack, over real sockets: strangers on other addresses hold slow bodies,
// bodies declaring 24 MiB that never arrive, and chunked bodies that stall, for as long as the
// test runs (each reconnects when it is cut off), while a genuine sender delivers real signed
// payloads from its own address. Linux routes all of 127.0.0.0/8 to lo, so each party binds its
// own loopback source address (`localAddress`).
import { request, Agent } from "node:http";
import { connect, type Socket } from "node:net";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { afterEach, describe, expect, it } from "vitest";
import { signBody } from "../../src/intake/signature.js";
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
function attack(port: number, localAddress: string, count: number, head: string, feed: (socket: Socket) => void): Attack {
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
function deliver(port: number, agent: Agent, payload: { event: string; body: Buffer }): Promise<{ status: number; ms: number }> {
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
    await new Promise((r) => setTimeout(r, 1_500));

    // GitHub delivers over a few connections at once; one delivery starts every 50 ms, so the
    // deliveries span the attackers being cut off and coming back.
    const agent = new Agent({ keepAlive: true, maxSockets: 8, localAddress: GENUINE } as ConstructorParameters<typeof Agent>[0]);
    const started = performance.now();
    const results = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 50));
        return deliver(port, agent, PAYLOADS[(i * 7) % PAYLOADS.length]!);
      }),
    );
    const totalMs = performance.now() - started;
    agent.destroy();
    const opened = attackers.reduce((n, a) => n + a.opened(), 0);
    const slowest = Math.max(...results.map((r) => r.ms));
    console.log(
      `admission under attack: 100 deliveries in ${Math.round(totalMs)} ms (slowest answer ${Math.round(slowest)} ms); attacker connections opened ${opened}`,
    );
    expect(results.filter((r) => r.status < 200 || r.status > 299).map((r) => r.status)).toEqual([]);
    expect(slowest).toBeLessThan(10_000);
    expect(running.intake.deliveries.size).toBe(100);
  }, 60_000);
});
