// GET /readyz tells the truth about recording: while the store cannot record a delivery (its
// disk full, a Redis that refuses writes or is gone), readiness fails, and it recovers by itself
// once the store can record again, without a delivery or a restart. Real disk full (a small
// tmpfs, root only), a real Steward over HTTP, a Redis server of the test's own.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { Redis } from "ioredis";
import { appKey } from "../support/app-key.js";
import { mountSmallDisk } from "../support/small-disk.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "./helpers.js";
import { perTest } from "./per-test.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!
  .examples[0]!;
const pushWithInstallation = JSON.stringify({ ...push, installation: { id: 77, node_id: "MDIz" } });

const scope = perTest();

const readyz = async (url: string) => (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(10_000) })).status;

/** Deliveries until one is refused (the disk filled under the store's preallocations too), at most `max`. */
async function postUntilRefused(url: string, max: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < max; i++) {
    const { status } = await postDelivery(url, { body: pushWithInstallation, id: deliveryId(), event: "push" });
    statuses.push(status);
    if (status === 503) break;
  }
  return statuses;
}

const disk = mountSmallDisk(24);
const noDisk = "unavailable" in disk ? disk.unavailable : undefined;
if (noDisk) console.warn(`disk-full readiness test skipped: ${noDisk}`);

describe("readiness while the disk is full", { timeout: 120_000 }, () => {
  it.skipIf(noDisk !== undefined)(
    "fails while a delivery cannot be recorded, or the disk is full before one is, and recovers once space is freed, without a restart",
    async () => {
      if ("unavailable" in disk) return;
      scope.stopAfter(disk, (d) => d.unmount());
      const { logger } = collectingLogger("warn");
      const steward = await scope.steward({
        config: testConfig({ privateKey: appKey().privateKey, dataDir: join(disk.dir, "data") }),
        logger,
        handlers: [],
        // Probed more often than in service (1 s while failing, 10 s while not): the test waits for the probes.
        readinessProbes: { failingMs: 200, healthyMs: 500 },
      });
      expect(await readyz(steward.url)).toBe(200);
      expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(202);

      await disk.fill();
      const statuses = await postUntilRefused(steward.url, 400);
      expect(statuses.at(-1)).toBe(503);
      // Asked again and again: the answer stays 503 while nothing can be recorded.
      for (let i = 0; i < 3; i++) expect(await readyz(steward.url)).toBe(503);

      await disk.free();
      // No delivery in between: readiness finds out by itself.
      await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(200), { timeout: 30_000, interval: 200 });
      expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(202);

      // Full again, and no delivery arrives: readiness sees it by itself (its probe now and then), and recovers.
      await disk.fill();
      await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(503), { timeout: 30_000, interval: 200 });
      await disk.free();
      await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(200), { timeout: 30_000, interval: 200 });
      expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(202);
      await steward.close();
    },
  );
});

/** A free loopback port (listened on and released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** A redis-server of the test's own on `port` (no persistence), answering PING before this resolves. */
async function startRedis(port: number, dir: string): Promise<ChildProcess> {
  const proc = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: "ignore" },
  );
  const client = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    retryStrategy: () => 50,
    maxRetriesPerRequest: 0,
  });
  client.on("error", () => undefined);
  try {
    await vi.waitFor(async () => expect(await client.ping()).toBe("PONG"), { timeout: 20_000, interval: 50 });
  } finally {
    client.disconnect();
  }
  return proc;
}

async function stopRedis(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGKILL");
  await exited;
}

const redisServer = await new Promise<string | undefined>((resolve) => {
  const probe = spawn("redis-server", ["--version"], { stdio: "ignore" });
  probe.once("error", (e) => resolve(`no redis-server binary (${e.message})`));
  probe.once("exit", (code) => resolve(code === 0 ? undefined : `redis-server --version exited ${code}`));
});
if (redisServer) console.warn(`Redis readiness tests skipped: ${redisServer}`);

describe.skipIf(redisServer !== undefined)("readiness on Redis", { timeout: 120_000 }, () => {
  async function stewardOn(port: number) {
    const { logger } = collectingLogger("warn");
    return scope.steward({
      config: testConfig({ privateKey: appKey().privateKey, redisUrl: `redis://127.0.0.1:${port}/0` }),
      logger,
      handlers: [],
    });
  }

  it("fails while Redis answers PING but refuses writes, and recovers once it takes them again", async () => {
    const port = await freePort();
    const dir = await scope.dataDir("redis");
    const redis = scope.stopAfter(await startRedis(port, dir), stopRedis);
    const steward = await stewardOn(port);
    expect(await readyz(steward.url)).toBe(200);
    expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(202);

    const admin = scope.stopAfter(new Redis({ port, host: "127.0.0.1" }), (c) => c.disconnect());
    // Out of memory under noeviction (Redis's default): every write is refused with OOM, PING still answers.
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", "1");
    expect(await admin.ping()).toBe("PONG");
    expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(503);
    for (let i = 0; i < 3; i++) expect(await readyz(steward.url)).toBe(503);

    await admin.config("SET", "maxmemory", "0");
    await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(200), { timeout: 30_000, interval: 200 });
    expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(202);
    void redis;
  });

  it("answers 503 in time while Redis takes commands but does not answer them", async () => {
    const port = await freePort();
    const dir = await scope.dataDir("redis");
    scope.stopAfter(await startRedis(port, dir), stopRedis);
    const steward = await stewardOn(port);
    expect(await readyz(steward.url)).toBe(200);
    const admin = scope.stopAfter(new Redis({ port, host: "127.0.0.1" }), (c) => c.disconnect());
    // Every client's commands wait out the pause, PING included.
    await admin.client("PAUSE", "20000", "ALL");
    const started = Date.now();
    const paused = await fetch(`${steward.url}/readyz`, { signal: AbortSignal.timeout(30_000) });
    expect(paused.status).toBe(503);
    expect(await paused.json()).toEqual({ status: "store did not answer in time" });
    // Answered by the readiness bound (2 s), long before the 20 s pause ended, however loaded the machine.
    expect(Date.now() - started).toBeLessThan(12_000);
    await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(200), { timeout: 60_000, interval: 200 });
  }, 120_000);

  it("fails while Redis is gone and recovers when it is back, without a restart", async () => {
    const port = await freePort();
    const dir = await scope.dataDir("redis");
    let redis = await startRedis(port, dir);
    scope.stopAfter(null, () => stopRedis(redis));
    const steward = await stewardOn(port);
    expect(await readyz(steward.url)).toBe(200);

    await stopRedis(redis);
    await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(503), { timeout: 30_000, interval: 200 });
    expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(503);

    redis = await startRedis(port, dir);
    await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(200), { timeout: 30_000, interval: 200 });
    expect((await postDelivery(steward.url, { body: pushWithInstallation, event: "push" })).status).toBe(202);
  });
});
