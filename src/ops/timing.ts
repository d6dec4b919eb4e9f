// Delivery lag (GitHub's timestamp to receipt) and queue time (due to claimed), kept in the store
// so the console shows the deployment's figures, not one process's: each process sums what it saw
// per minute (count, sum, max and a coarse histogram) and writes that minute's record under its
// own key every few seconds while it changes. The console merges the records of a window. The
// histograms on /metrics are the precise view; this is the one a person reads without Prometheus.
import { randomBytes } from "node:crypto";
import type { Store } from "../store/types.js";

const PREFIX = "steward/timing/";
/** Upper bounds (seconds) of the buckets kept; a percentile reads as "at most" its bucket's bound. */
export const TIMING_BOUNDS = [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200] as const;
/** How often a process writes the minute it is summing, when it changed. */
export const TIMING_FLUSH_MS = 5_000;
/** Records outlive the console's window (30 minutes) with room to spare. */
const TIMING_TTL_MS = 2 * 3_600_000;

export type TimingKind = "lag" | "queue";

export interface TimingSummary {
  count: number;
  sum: number;
  max: number;
  /** Counts per bucket of TIMING_BOUNDS, plus one over the last bound. */
  buckets: number[];
}

interface MinuteRecord {
  minute: number;
  lag: TimingSummary;
  queue: TimingSummary;
}

const empty = (): TimingSummary => ({ count: 0, sum: 0, max: 0, buckets: new Array(TIMING_BOUNDS.length + 1).fill(0) });

function add(into: TimingSummary, seconds: number): void {
  into.count++;
  into.sum += seconds;
  into.max = Math.max(into.max, seconds);
  const i = TIMING_BOUNDS.findIndex((b) => seconds <= b);
  into.buckets[i < 0 ? TIMING_BOUNDS.length : i]!++;
}

function merge(into: TimingSummary, from: TimingSummary | undefined): void {
  if (!from || typeof from.count !== "number") return;
  into.count += from.count;
  into.sum += from.sum;
  into.max = Math.max(into.max, from.max);
  from.buckets.forEach((n, i) => {
    if (i < into.buckets.length) into.buckets[i]! += n;
  });
}

/** The bucket bound at or under which `fraction` of the values fall (Infinity: over the last bound). */
export function percentileBound(summary: TimingSummary, fraction: number): number {
  const rank = Math.ceil(summary.count * fraction);
  let seen = 0;
  for (let i = 0; i < summary.buckets.length; i++) {
    seen += summary.buckets[i]!;
    if (seen >= rank) return TIMING_BOUNDS[i] ?? Infinity;
  }
  return Infinity;
}

export interface TimingRecorder {
  observe(kind: TimingKind, seconds: number): void;
  /** Write the minute being summed now, if it changed (also done every TIMING_FLUSH_MS). */
  flush(): Promise<void>;
  /** Stop the periodic writes after a last flush. */
  close(): Promise<void>;
}

export function timingRecorder(
  kv: Pick<Store, "set">,
  opts: { flushMs?: number; onError?(e: unknown): void } = {},
): TimingRecorder {
  const writer = randomBytes(6).toString("hex");
  let current: MinuteRecord | undefined;
  let dirty = false;
  let writing: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    if (!dirty || !current) return writing;
    dirty = false;
    const record = structuredClone(current);
    writing = writing
      .then(() =>
        kv.set(`${PREFIX}${String(record.minute).padStart(15, "0")}/${writer}`, record, { ttlMs: TIMING_TTL_MS }),
      )
      .catch((e: unknown) => opts.onError?.(e));
    return writing;
  };
  const timer = setInterval(() => void flush(), opts.flushMs ?? TIMING_FLUSH_MS);
  timer.unref();
  return {
    observe(kind, seconds) {
      const minute = Math.floor(Date.now() / 60_000) * 60_000;
      if (current?.minute !== minute) {
        // The minute that ended is written as it stands before the next one begins.
        void flush();
        current = { minute, lag: empty(), queue: empty() };
      }
      add(current[kind], Math.max(0, seconds));
      dirty = true;
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

export interface TimingWindow {
  lag: TimingSummary;
  queue: TimingSummary;
}

/** Every process's records of the minutes from `since` (ms) on, merged. */
export async function readTiming(kv: Pick<Store, "list">, since: number): Promise<TimingWindow> {
  const out: TimingWindow = { lag: empty(), queue: empty() };
  for (const { value } of await kv.list<MinuteRecord>(PREFIX)) {
    if (!value || value.minute < since) continue;
    merge(out.lag, value.lag);
    merge(out.queue, value.queue);
  }
  return out;
}
