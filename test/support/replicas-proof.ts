// What a run of replicas with the write slot's holder killed must show, on any backend
// (test/redis/replicas.test.ts, test/redis/cluster.test.ts, test/postgres/replicas.test.ts): the
// figures measured printed, then every kill confirmed with writes resuming after it, nothing
// lost or doubled, the spacing kept across replicas, one token mint for the whole run and no
// token in the store, the registry and /metrics showing the replicas.
import { expect } from "vitest";
import { leakGuard } from "./leak-guard.js";
import { runReplicas, type ReplicaBackend, type ReplicaRunOptions, type ReplicaRunResult } from "./replicas-harness.js";

/** The store's clock and the hub's are read in whole milliseconds (or finer). */
const CLOCK_GRAIN_MS = 2;

export interface ReplicaProof {
  /** Names the run in the printed figures. */
  label: string;
  replicas: number;
  holderKills: number;
  writeIntervalMs: number;
  /** Writes resume within this long after each kill. */
  livenessBoundMs?: number;
  /** /metrics also shows what the replicas hold and the queue's depth. */
  holdsInMetrics?: boolean;
}

/**
 * Runs replicas on `backend`, killing the write slot's holder, and checks what every such run
 * must show. Runs arrive every 500 ms while the kills go on, held back while two of them are
 * not yet sent by the hub.
 */
export async function proveHolderKills(
  backend: ReplicaBackend,
  p: ReplicaProof & { minRuns: number; tokens?: ReplicaRunOptions["tokens"] },
): Promise<ReplicaRunResult> {
  const result = await runReplicas({
    backend,
    replicas: p.replicas,
    holderKills: p.holderKills,
    writeIntervalMs: p.writeIntervalMs,
    runEveryMs: 500,
    minRuns: p.minRuns,
    maxUndelivered: 2,
    ...(p.tokens ? { tokens: p.tokens } : {}),
    onOutput: (label, text) => leakGuard.output(label, text),
    log: (line) => console.log(line),
    deadlineMs: 240_000,
  });
  expectReplicaProof(result, p);
  return result;
}

export function expectReplicaProof(result: ReplicaRunResult, p: ReplicaProof): void {
  console.log(
    `${p.label}: ${result.runs} runs, ${result.writes} writes, min gap ${result.minWriteGapMs} ms, ` +
      `resumed after ${result.kills.map((k) => k.resumedAfterMs).join(", ")} ms` +
      (p.livenessBoundMs === undefined ? "" : ` (bound ${p.livenessBoundMs} ms)`) +
      `, mints ${result.mints}, answers ${JSON.stringify(result.statuses)}, ${result.seconds.toFixed(1)} s`,
  );
  expect(result.kills).toHaveLength(p.holderKills);
  for (const kill of result.kills) {
    // The victim was the holder: the store still named it after it died.
    expect(kill.confirmed).toBe(true);
    expect(kill.resumedAfterMs).toBeDefined();
    if (p.livenessBoundMs !== undefined) expect(kill.resumedAfterMs!).toBeLessThanOrEqual(p.livenessBoundMs);
  }
  expect(result.answeredNotRecorded).toEqual([]);
  expect(result.lostEffects).toEqual([]);
  expect(result.duplicatedEffects).toEqual([]);
  // Spacing across replicas, as the hub received the writes: a write is sent no sooner than
  // the interval after the previous one (any replica's) was answered.
  expect(result.minWriteGapMs).toBeGreaterThanOrEqual(p.writeIntervalMs - CLOCK_GRAIN_MS);
  // Every replica and every restart share one token, sealed in the store.
  expect(result.mints).toBe(1);
  expect(result.tokensInStore).toBe(0);
  expect(result.tokenShapesInStore).toBe(0);
  // The operator's view.
  expect(result.registry).toHaveLength(p.replicas);
  expect(result.metrics).toMatch(new RegExp(`^steward_replicas_alive ${p.replicas}$`, "m"));
  if (p.holdsInMetrics) {
    expect(result.metrics).toMatch(/^steward_replica_holds\{replica="[^"]+",what="write_slot"\} \d+$/m);
    expect(result.metrics).toMatch(/^steward_replica_holds\{replica="[^"]+",what="delivery_lease"\} \d+$/m);
    expect(result.metrics).toMatch(/^steward_queue_depth \d+$/m);
  }
}
