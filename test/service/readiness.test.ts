// GET /readyz tells the truth about recording: while the store cannot record a delivery (its
// disk full, a Redis that refuses writes or is gone), readiness fails, and it recovers by itself
// once the store can record again, without a delivery or a restart. Real disk full (a small
// tmpfs, root only), a real Steward over HTTP, a Redis server of the test's own.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { Redis } from "ioredis";
import { appKey } from "../support/app-key.js";
import { mountSmallDisk } from "../support/small-disk.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "./helpers.js";
import { perTest } from "./per-test.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!.examples[0]!;
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
  it.skipIf(noDisk !== undefined)("fails while a delivery cannot be recorded and recovers once space is freed, without a restart", async () => {
    if ("unavailable" in disk) return;
    scope.stopAfter(disk, (d) => d.unmount());
    const { logger } = collectingLogger("warn");
    const steward = await scope.steward({
      config: testConfig({ privateKey: appKey().privateKey, dataDir: join(disk.dir, "data") }),
      logger,
      handlers: [],
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
    await steward.close();
  });
});
