// Whether the intake can record deliveries now (GET /readyz). Readiness must not say "ready" while
// the intake refuses deliveries (the disk full, Redis refusing writes): the last outcome of
// recording is kept, and while it is a failure readiness asks the store for a probe write shaped
// like the failed delivery, so it recovers on its own, without waiting for a delivery GitHub may
// not send again. While recording works it probes now and then too, so a store that stopped
// taking writes is seen before a delivery is refused.
import type { StewardStore } from "../store/contract.js";

/** Readiness probes the store at most this often while recording fails (a busy prober gets the last answer). */
export const FAILING_PROBE_INTERVAL_MS = 1_000;
/** While recording works, readiness still probes this often, so a disk that filled up is seen before a delivery fails on it. */
export const HEALTHY_PROBE_INTERVAL_MS = 10_000;
/** A probe writes the failed delivery's payload size, within these bounds: like it, and cheap. */
const PROBE_MIN_BYTES = 4 * 1024;
const PROBE_MAX_BYTES = 1024 * 1024;

export interface RecordingHealth {
  /** A delivery was recorded. */
  recorded(): void;
  /** A delivery of `bytes` could not be recorded. */
  failed(bytes: number): void;
  /** The store answers and can record, by a probe when one is due. */
  ready(): Promise<boolean>;
}

/** How often readiness probes the store: while recording fails, and while it works. */
export interface ProbeIntervals {
  failingMs: number;
  healthyMs: number;
}

export function createRecordingHealth(
  store: Pick<StewardStore, "ready" | "canRecord">,
  intervals: ProbeIntervals = { failingMs: FAILING_PROBE_INTERVAL_MS, healthyMs: HEALTHY_PROBE_INTERVAL_MS },
): RecordingHealth {
  /** Set while the last delivery could not be recorded and nothing was recorded since. */
  let failing: { bytes: number; generation: number } | undefined;
  let generation = 0;
  let probing: Promise<boolean> | undefined;
  let probedAt = Number.NEGATIVE_INFINITY;

  function canRecord(): Promise<boolean> {
    if (probing) return probing;
    const now = failing;
    const since = Date.now() - probedAt;
    // The last probe failed moments ago (else `failing` would be cleared): its answer stands.
    if (now && since < intervals.failingMs) return Promise.resolve(false);
    if (!now && since < intervals.healthyMs) return Promise.resolve(true);
    probing = store
      .canRecord(Math.min(PROBE_MAX_BYTES, Math.max(PROBE_MIN_BYTES, now?.bytes ?? 0)))
      .catch(() => false)
      .then((ok) => {
        // A delivery that failed while the probe ran is newer news than the probe.
        if (ok && failing?.generation === now?.generation) failing = undefined;
        else if (!ok && !failing) failing = { bytes: PROBE_MIN_BYTES, generation: ++generation };
        return failing === undefined;
      })
      .finally(() => {
        probing = undefined;
        probedAt = Date.now();
      });
    return probing;
  }

  return {
    recorded() {
      failing = undefined;
    },
    failed(bytes) {
      failing = { bytes, generation: ++generation };
    },
    async ready() {
      return (await store.ready()) && (await canRecord());
    },
  };
}
