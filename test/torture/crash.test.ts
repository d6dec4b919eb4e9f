// Crash torture (bounded for CI): Steward as a child process, SIGKILLed at seeded random
// moments while the hub delivers work that causes real effects. Nothing lost, nothing twice.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { leakGuard } from "../support/leak-guard.js";
import { runCrashTorture } from "./crash-harness.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function scanStore(dir: string): Promise<void> {
  for (const f of ["steward.db", "steward.db-wal"]) {
    const bytes = await readFile(join(dir, f)).catch(() => undefined);
    if (bytes) leakGuard.output(`crash store ${f}`, bytes.toString("latin1"));
  }
}

describe("crash torture", () => {
  it("SIGKILL at random moments: every delivery processed, every effect exactly once", async () => {
    const dir = await mkdtemp(join(tmpdir(), "steward-crash-"));
    dirs.push(dir);
    const result = await runCrashTorture({
      runs: 30,
      kills: 3,
      spreadMs: 6_000,
      seed: 7,
      dataDir: dir,
      deadlineMs: 150_000,
      onOutput: (label, text) => leakGuard.output(label, text),
    });
    await scanStore(dir);
    console.log(
      `crash torture: ${JSON.stringify({ ...result, lostDeliveries: result.lostDeliveries.length, notDone: result.notDone.length })}`,
    );
    expect(result.kills).toBeGreaterThan(0);
    expect(result.failedAttempts).toBeGreaterThan(0); // the hub did hit a dead Steward
    expect(result.lostDeliveries).toEqual([]);
    expect(result.notDone).toEqual([]);
    expect(result.lostEffects).toEqual([]);
    expect(result.duplicatedEffects).toEqual([]);
    expect(result.reruns).toBe(result.runs);
  }, 200_000);

  it("downtime: deliveries sent while Steward is down are all recovered by the sweeper", async () => {
    const dir = await mkdtemp(join(tmpdir(), "steward-down-"));
    dirs.push(dir);
    const result = await runCrashTorture({
      runs: 15,
      kills: 1,
      downMs: [2_500, 2_500],
      spreadMs: 1_500,
      seed: 11,
      dataDir: dir,
      deadlineMs: 100_000,
      onOutput: (label, text) => leakGuard.output(label, text),
    });
    await scanStore(dir);
    console.log(
      `downtime torture: ${JSON.stringify({ ...result, lostDeliveries: result.lostDeliveries.length, notDone: result.notDone.length })}`,
    );
    // Only the sweeper asks the hub to redeliver; every failed delivery came back that way.
    expect(result.redeliveries).toBeGreaterThan(0);
    expect(result.lostDeliveries).toEqual([]);
    expect(result.notDone).toEqual([]);
    expect(result.lostEffects).toEqual([]);
    expect(result.duplicatedEffects).toEqual([]);
  }, 150_000);
});
