// Three replicas on one Redis, the replica holding the installation's write slot killed on
// purpose (again and again) and restarted: writes resume within the liveness bound, the
// spacing holds across replicas, every run gets exactly one re-run and one check run, the
// whole run mints one installation token (shared, sealed in Redis: no token in Redis in
// plaintext), and /metrics shows the replicas and what they hold.
import { describe, expect, it } from "vitest";
import { leakGuard } from "../support/leak-guard.js";
import { redisUp } from "./support.js";
import { runReplicas } from "../support/replicas-harness.js";
import { redisBackend } from "./replicas-support.js";

/** Generous on purpose (the machine is shared); the figures measured are printed. */
const LIVENESS_BOUND_MS = 15_000;
const WRITE_INTERVAL_MS = 400;
/** Redis TIME is read in whole milliseconds, the hub's clock too. */
const CLOCK_GRAIN_MS = 2;

describe.skipIf(!redisUp)("replicas on one Redis", () => {
  it("the write slot's holder killed three times: writes resume, spacing holds, nothing lost or doubled, one token mint", async () => {
    const result = await runReplicas({
      backend: redisBackend(),
      replicas: 3,
      holderKills: 3,
      writeIntervalMs: WRITE_INTERVAL_MS,
      runEveryMs: 500,
      minRuns: 12,
      // GitHub's ~520-character installation tokens, end to end.
      tokens: { format: "stateless" },
      onOutput: (label, text) => leakGuard.output(label, text),
      log: (line) => console.log(line),
    });
    console.log(
      `replicas: ${result.runs} runs, ${result.writes} writes, min gap ${result.minWriteGapMs} ms, ` +
        `resumed after ${result.kills.map((k) => k.resumedAfterMs).join(", ")} ms, mints ${result.mints}, ${result.seconds.toFixed(1)} s`,
    );
    expect(result.kills).toHaveLength(3);
    for (const kill of result.kills) {
      // The victim was the holder: Redis still named its client after it died.
      expect(kill.confirmed).toBe(true);
      expect(kill.resumedAfterMs).toBeDefined();
      expect(kill.resumedAfterMs!).toBeLessThanOrEqual(LIVENESS_BOUND_MS);
    }
    expect(result.answeredNotRecorded).toEqual([]);
    expect(result.lostEffects).toEqual([]);
    expect(result.duplicatedEffects).toEqual([]);
    // Spacing across replicas, as the hub received the writes: a write is sent no sooner than
    // the interval after the previous one (any replica's) was answered.
    expect(result.minWriteGapMs).toBeGreaterThanOrEqual(WRITE_INTERVAL_MS - CLOCK_GRAIN_MS);
    // Three replicas and three restarts share one token.
    expect(result.mints).toBe(1);
    expect(result.tokensInStore).toBe(0);
    expect(result.tokenShapesInStore).toBe(0);
    // The operator's view.
    expect(result.registry).toHaveLength(3);
    expect(result.metrics).toMatch(/^steward_replicas_alive 3$/m);
    expect(result.metrics).toMatch(/^steward_replica_holds\{replica="[^"]+",what="write_slot"\} \d+$/m);
    expect(result.metrics).toMatch(/^steward_replica_holds\{replica="[^"]+",what="delivery_lease"\} \d+$/m);
    expect(result.metrics).toMatch(/^steward_queue_depth \d+$/m);
  }, 300_000);
});
