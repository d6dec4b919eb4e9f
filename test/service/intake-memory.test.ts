// Memory under slow and large bodies, measured on the real server in a child process: fifty
// unauthenticated connections from one address each declare a 24 MiB body and send most of it,
// then stall. Bodies are charged the bytes they deliver: the address's bodies share its 25 MiB
// of admission's room, those that find no room are answered 503 with Retry-After (the excess past its
// 64 places at once, the rest as they run out of room), the stalled ones are cut off by the body
// timeout, and RSS grows by less than 150 MB throughout. Admission bounds what is held (here
// 25 MiB); the rest of the growth is what bodies refused part-way had read, garbage until the
// next collection.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { stewardChildEnv } from "../torture/crash-harness.js";

const CHILD = resolve(import.meta.dirname, "../torture/fixtures/steward-child.ts");
const MiB = 1024 * 1024;
const CONNECTIONS = 50;
const DECLARED = 24 * MiB;
const SENT = DECLARED - 64 * 1024;

let hub: HubHandle;
let dataDir: string;
let child: ChildProcess;
let url: string;

beforeAll(async () => {
  hub = await createHub();
  dataDir = await mkdtemp(join(tmpdir(), "steward-intake-memory-"));
  child = spawn(process.execPath, ["--import", "tsx", CHILD], {
    env: stewardChildEnv(hub, dataDir, { STEWARD_REDELIVER_INTERVAL: "1h", STEWARD_BODY_TIMEOUT: "4s" }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  url = await new Promise<string>((resolveUrl, reject) => {
    const look = setInterval(() => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearInterval(look);
        resolveUrl(m[1]!);
      }
    }, 20);
    child.once("exit", (code) => {
      clearInterval(look);
      reject(new Error(`steward child exited (${code}): ${out}`));
    });
  });
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  await hub?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function rss(): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^steward_process_resident_memory_bytes (\d+)/m.exec(text)![1]);
}

interface Hostile {
  socket: Socket;
  sent: number;
  answer: string;
  /** Settles when the socket closed or everything was sent. */
  settled: Promise<void>;
  closed: Promise<void>;
}

/** A sender that declares DECLARED bytes, sends SENT of them whatever it is told, then stalls. */
function hostile(port: number, i: number): Hostile {
  const socket = connect(port, "127.0.0.1");
  const h = { socket, sent: 0, answer: "" } as Hostile;
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let settle!: () => void;
  h.settled = new Promise<void>((r) => (settle = r));
  h.closed = new Promise<void>((r) => socket.once("close", () => r()));
  socket.on("close", () => settle());
  socket.on("error", () => undefined);
  socket.on("data", (d) => (h.answer += d.toString("latin1")));
  const pump = () => {
    while (!socket.destroyed && h.sent < SENT) {
      h.sent += chunk.length;
      if (!socket.write(chunk)) return void socket.once("drain", pump);
    }
    if (h.sent >= SENT) settle();
  };
  socket.on("connect", () => {
    socket.write(
      `POST /api/github/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n` +
        `X-GitHub-Delivery: hostile-${i}\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\nContent-Length: ${DECLARED}\r\n\r\n`,
    );
    pump();
  });
  return h;
}

const statusOf = (h: Hostile) => Number(/^HTTP\/1\.1 (\d{3})/.exec(h.answer)?.[1] ?? 0);

describe("intake memory under slow and large bodies", () => {
  it(`holds ${CONNECTIONS} connections declaring 24 MiB each with RSS growth under 150 MB, answers the excess 503 with Retry-After and cuts stalled bodies off`, async () => {
    // Warm up: the server's first requests allocate what it keeps anyway.
    for (let i = 0; i < 20; i++) await (await fetch(`${url}/healthz`)).text();
    const before = await rss();
    const port = Number(new URL(url).port);
    const senders = Array.from({ length: CONNECTIONS }, (_, i) => hostile(port, i));
    // Every sender has either sent all it meant to (and stalls) or was cut off.
    await Promise.all(senders.map((s) => s.settled));
    let peak = await rss();
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 100));
      peak = Math.max(peak, await rss());
    }
    const growthMb = (peak - before) / 1e6;
    console.log(
      `intake memory: RSS ${Math.round(before / 1e6)} MB before, ${Math.round(peak / 1e6)} MB peak with ${CONNECTIONS} hostile bodies held (growth ${growthMb.toFixed(1)} MB)`,
    );
    expect(growthMb).toBeLessThan(150);
    // Stalled bodies are cut off by the body timeout (4 s here; 15 s by default, the server's own is 60 s).
    await Promise.all(senders.map((s) => s.closed));
    const statuses = senders.map(statusOf);
    const refused = senders.filter((s) => statusOf(s) === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(r.answer.toLowerCase()).toContain("retry-after: 5");
    expect(statuses.filter((s) => s !== 503 && s !== 408)).toEqual([]);
    expect(statuses).toContain(408);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  }, 120_000);
});
