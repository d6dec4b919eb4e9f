// A hostile WEBHOOK_PROXY_URL channel against the real service in a child process: a local
// smee-style channel on 127.0.0.1 sends unsigned 4 MiB events as fast as the child reads them,
// and oversized ones, with genuine signed deliveries among them. The child's RSS stays within a
// bound throughout (the channel's events are dropped as they arrive, never buffered whole), and
// every genuine delivery is recorded. Then the pace: signed events forwarded no faster than the
// rate after a burst, and a flood of dropped events logged in a line or two.
import { spawn, type ChildProcess } from "node:child_process";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { Writable } from "node:stream";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { startWebhookProxy } from "../../src/intake/webhook-proxy.js";
import { createLogger } from "../../src/log/logger.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { stewardChildEnv } from "../torture/crash-harness.js";

const CHILD = resolve(import.meta.dirname, "../torture/fixtures/steward-child.ts");
const MiB = 1024 * 1024;
/** Unsigned events of 4 MiB sent in the flood (400 MiB in all). */
const HOSTILE_EVENTS = 100;
/** A genuine signed delivery after every this many hostile events. */
const GENUINE_EVERY = 20;
/**
 * Growth of the child's RSS over its level before the flood that the test allows. The flood is
 * 520 MiB in all, so a proxy that kept events would pass it several times over; a proxy that drops
 * them as they arrive still leaves some garbage that V8 collects when it chooses (84 MiB was seen on
 * a loaded machine), which this bound must not mistake for a leak.
 */
const MAX_GROWTH = 192 * MiB;

const opened = (examples as { name: string; examples: Record<string, unknown>[] }[])
  .find((e) => e.name === "issues")!
  .examples.find((e) => e.action === "opened")!;

let hub: HubHandle;
let dataDir: string;
let child: ChildProcess;
let channel: Server;
let listener: ServerResponse | undefined;
let url: string;
let out = "";

beforeAll(async () => {
  hub = await createHub();
  dataDir = await mkdtemp(join(tmpdir(), "steward-proxy-hostile-"));
  channel = createServer((req, res) => {
    if (req.url !== "/channel/hostile") return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write("event: ready\ndata: {}\n\n");
    listener = res;
    res.on("close", () => {
      if (listener === res) listener = undefined;
    });
  });
  await new Promise<void>((r) => channel.listen(0, "127.0.0.1", r));
  const source = `http://127.0.0.1:${(channel.address() as AddressInfo).port}/channel/hostile`;
  child = spawn(process.execPath, ["--import", "tsx", CHILD], {
    env: stewardChildEnv(hub, dataDir, {
      STEWARD_REDELIVER_INTERVAL: "1h",
      WEBHOOK_PROXY_URL: source,
      LOG_LEVEL: "info",
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
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
  await vi.waitFor(() => expect(listener).toBeDefined(), { timeout: 30_000, interval: 20 });
}, 60_000);

afterAll(async () => {
  listener?.destroy();
  if (child && child.exitCode === null) {
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
  }
  channel?.close();
  await hub?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function rss(): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^steward_process_resident_memory_bytes (\d+)/m.exec(text)![1]);
}

/** Writes `data` as one event, waiting while the socket is full (the child reads at its own pace). */
async function send(data: string | Buffer): Promise<void> {
  const res = listener;
  if (!res) throw new Error("the proxy is not connected");
  const ok = res.write(typeof data === "string" ? `data: ${data}\n\n` : data);
  if (!ok) await Promise.race([once(res, "drain"), once(res, "close")]);
}

let seq = 0;
function smeeFields(guid: string, body: object | string, headers: Record<string, string>): string {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return `{"host":"smee.io","content-type":"application/json","content-length":"${Buffer.byteLength(text)}","x-github-event":"issues","x-github-delivery":"${guid}",${Object.entries(
    headers,
  )
    .map(([k, v]) => `"${k}":"${v}",`)
    .join("")}"user-agent":"GitHub-Hookshot/abc","body":${text},"query":{},"timestamp":${Date.now()}}`;
}

function genuine(): { guid: string; data: string } {
  const guid = `proxy-genuine-${process.pid}-${++seq}`;
  const body = JSON.stringify(opened);
  const signature = `sha256=${createHmac("sha256", hub.env.WEBHOOK_SECRET).update(body).digest("hex")}`;
  return { guid, data: smeeFields(guid, body, { "x-hub-signature-256": signature }) };
}

/** An event of `size` bytes of data, an issue whose body text fills it; unsigned unless `headers` says otherwise. */
function filler(size: number, headers = ""): Buffer {
  const open = `{"host":"smee.io","content-type":"application/json",${headers}"x-github-event":"issues","x-github-delivery":"proxy-unsigned-${process.pid}","body":{"action":"opened","issue":{"body":"`;
  const close = `"}},"query":{},"timestamp":1}`;
  return Buffer.from(`data: ${open}${"x".repeat(size - open.length - close.length)}${close}\n\n`);
}

/** Whether the child logged `guid` as recorded. */
const recorded = (guid: string) =>
  out.split("\n").some((line) => line.includes(`"deliveryId":"${guid}"`) && line.includes("delivery recorded"));

describe("a hostile WEBHOOK_PROXY_URL channel", { timeout: 180_000 }, () => {
  it("cannot grow memory with unsigned 4 MiB events, and genuine signed deliveries still get through", async () => {
    const first = genuine();
    await send(first.data);
    await vi.waitFor(() => expect(recorded(first.guid)).toBe(true), { timeout: 30_000, interval: 50 });
    // A few of each kind first, so that the level before the flood includes what reading them
    // costs once (code compiled, buffers grown): the flood must not add to it.
    const hostile = filler(4 * MiB);
    const forged = `"x-hub-signature-256":"sha256=${"0".repeat(64)}",`;
    const oversized = [filler(12 * MiB, `${forged}"content-length":"${12 * MiB}",`), filler(12 * MiB, forged)];
    for (let i = 0; i < 5; i++) await send(hostile);
    for (const event of oversized) await send(event);
    const warm = genuine();
    await send(warm.data);
    await vi.waitFor(() => expect(recorded(warm.guid)).toBe(true), { timeout: 30_000, interval: 50 });
    // The level before the flood: the highest of a few samples.
    let before = 0;
    for (let i = 0; i < 5; i++) {
      before = Math.max(before, await rss());
      await new Promise((r) => setTimeout(r, 100));
    }

    expect(hostile.length).toBeGreaterThan(4 * MiB);
    const genuineIds = [first.guid, warm.guid];
    let peak = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await rss());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    for (let i = 1; i <= HOSTILE_EVENTS; i++) {
      await send(hostile);
      if (i % GENUINE_EVERY === 0) {
        const g = genuine();
        genuineIds.push(g.guid);
        await send(g.data);
      }
    }
    // Signed-looking but past the cap, declared so before its body or not: dropped as they arrive.
    for (let i = 0; i < 5; i++) for (const event of oversized) await send(event);
    const last = genuine();
    genuineIds.push(last.guid);
    await send(last.data);
    await vi.waitFor(() => expect(recorded(last.guid)).toBe(true), { timeout: 60_000, interval: 100 });
    sampling = false;
    await sampler;
    const growth = peak - before;
    console.log(
      `webhook proxy under ${HOSTILE_EVENTS} unsigned 4 MiB events: RSS ${(before / MiB).toFixed(0)} MB before, peak ${(peak / MiB).toFixed(0)} MB (+${(growth / MiB).toFixed(1)} MB)`,
    );
    expect(growth).toBeLessThan(MAX_GROWTH);
    expect(out).toMatch(/relayed event skipped: it is unsigned/);
    expect(out).toMatch(/relayed event skipped: its body is declared larger than 8388608 bytes/);
    expect(out).toMatch(/relayed event skipped: larger than 8388608 bytes/);

    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
    const store = openSqliteStore(dataDir);
    try {
      for (const id of genuineIds) expect((await store.deliveries.getDelivery(id))?.delivery.event, id).toBe("issues");
      expect(await store.deliveries.getDelivery(`proxy-unsigned-${process.pid}`)).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

describe("the webhook proxy's pace", { timeout: 60_000 }, () => {
  it("forwards signed events no faster than its rate after the burst, and logs a flood of drops in a line or two", async () => {
    const arrived: number[] = [];
    const target = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        arrived.push(Date.now());
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    let stream: ServerResponse | undefined;
    const relay = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      stream = res;
    });
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
    const lines: string[] = [];
    const logger = createLogger({
      level: "debug",
      format: "json",
      destination: new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }),
    });
    const proxy = startWebhookProxy({
      source: `http://127.0.0.1:${(relay.address() as AddressInfo).port}/c`,
      target: `http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`,
      logger,
      eventsPerSecond: 4,
      burst: 2,
    });
    try {
      await vi.waitFor(() => expect(stream).toBeDefined(), { timeout: 10_000, interval: 20 });
      let events = "";
      for (let i = 0; i < 1000; i++)
        events += `data: {"x-github-event":"push","x-github-delivery":"u${i}","body":{}}\n\n`;
      for (let i = 0; i < 6; i++)
        events += `data: ${JSON.stringify({ "x-github-event": "push", "x-github-delivery": `s${i}`, "x-hub-signature-256": "sha256=00", body: { n: i } })}\n\n`;
      const started = Date.now();
      stream!.write(events);
      await vi.waitFor(() => expect(arrived).toHaveLength(6), { timeout: 20_000, interval: 20 });
      // Two at once (the burst), then four a second: the last no sooner than a second later.
      expect(arrived.at(-1)! - started).toBeGreaterThanOrEqual(900);
      const unsignedLines = lines.filter((l) => l.includes("it is unsigned"));
      expect(unsignedLines.length).toBeGreaterThanOrEqual(1);
      expect(unsignedLines.length).toBeLessThanOrEqual(2);
    } finally {
      stream?.destroy();
      await proxy.close();
      relay.close();
      target.close();
    }
  });
});
