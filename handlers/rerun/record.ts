// Decision facts, kept so a policy change can be simulated against what really happened ("the last
// 200 failed runs would have been re-run N times"). One record per judged run attempt: the run, the
// jobs and log tails the decision read, where the branch stood, and what Steward decided. Log tails
// are short: rules look for errors, which print last.
import type { Store } from "../../src/index.js";
import type { CurrentHead, JobFacts, RunFacts } from "./decide.js";
import { rerunFactsPrefix } from "./keys.js";

/** Records live this long; the simulation reads the newest. */
export const FACTS_TTL_MS = 30 * 24 * 3_600_000;
/** The end of a log that is kept with the facts. */
export const LOG_TAIL_CHARS = 8 * 1024;

export interface RerunFactRecord {
  repository: string;
  run: RunFacts;
  /** Absent when the run was out of scope and nothing was read. */
  jobs?: JobFacts[];
  logs?: [number, string | null][];
  current?: CurrentHead;
  decision: "skip" | "give_up" | "rerun";
  at: string;
}

export { rerunFactsPrefix };

export async function recordRerunFacts(
  store: Store,
  record: Omit<RerunFactRecord, "at" | "logs"> & { logs?: ReadonlyMap<number, string | null> },
  at = new Date(),
): Promise<void> {
  const { logs, ...rest } = record;
  const value: RerunFactRecord = {
    ...rest,
    ...(logs
      ? {
          logs: [...logs].map(
            ([id, text]) => [id, text === null ? null : text.slice(-LOG_TAIL_CHARS)] as [number, string | null],
          ),
        }
      : {}),
    at: at.toISOString(),
  };
  // Time first in the key: a prefix listing comes back oldest first.
  const key = `${rerunFactsPrefix(record.repository)}${String(at.getTime()).padStart(15, "0")}:${record.run.id}:${record.run.runAttempt}`;
  await store.set(key, value, { ttlMs: FACTS_TTL_MS });
}
