// The engine's side of the intake: a delivery is recorded queued and the pool is woken to claim
// it in order. During a flood (intake-first.ts) a backend with a spool takes it there.
import type { DeliveryIntake } from "../intake/delivery-intake.js";
import type { IncomingDelivery } from "../store/records.js";
import type { StewardStore } from "../store/contract.js";
import type { WorkerPool } from "./pool.js";
import type { IntakeFirst } from "./intake-first.js";

/** Readiness probes the store at most this often while recording fails (a busy prober gets the last answer). */
export const RECORD_PROBE_INTERVAL_MS = 1_000;
/** While recording works, readiness still probes this often, so a disk that filled up is seen before a delivery fails on it. */
export const HEALTHY_PROBE_INTERVAL_MS = 10_000;
/** A probe writes the failed delivery's payload size, within these bounds: like it, and cheap. */
const PROBE_MIN_BYTES = 4 * 1024;
const PROBE_MAX_BYTES = 1024 * 1024;

export function createIntake(
  store: Pick<StewardStore, "deliveries" | "leases" | "ready" | "canRecord">,
  pool: WorkerPool,
  intakeFirst?: IntakeFirst,
  /** Whether some handler (or the engine itself) takes the delivery; one none takes is recorded settled. */
  routed: (delivery: IncomingDelivery) => boolean = () => true,
): DeliveryIntake {
  /** A queued delivery's row is committed: the pool learns of it. */
  const queued = (result: "recorded" | "duplicate") => {
    if (result === "recorded") pool.wake();
    return result;
  };

  // Not an async function: each path returns the store's own promise, so a delivery costs no
  // promise of this layer's and no turns of the microtask queue to adopt the store's.
  function record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    intakeFirst?.arrived();
    // Nothing to run (a job queued or in progress, a check run created, an event only some other
    // app of the installation wants): recorded done, and the pool is neither woken nor given it.
    // Spooled whenever the spool takes it, flood or not: nobody waits for its row, and a commit
    // of its own would hold its sender for the commit.
    if (!routed(delivery)) {
      delivery.settled = true;
      return store.deliveries.recordSpooled?.(delivery) ?? store.deliveries.record(delivery);
    }
    // During a flood, the turn's deliveries in one write to the spool rather than a commit; the pool is woken by the move.
    const spooled = intakeFirst?.yielding() ? store.deliveries.recordSpooled?.(delivery) : undefined;
    if (spooled) return spooled;
    return store.deliveries.record(delivery).then(queued);
  }

  // Readiness must not say "ready" while the intake refuses deliveries (the disk full, Redis
  // refusing writes): the last outcome of recording is kept, and while it is a failure readiness
  // asks the store for a probe write shaped like the failed delivery, so it recovers on its own,
  // without waiting for a delivery GitHub may not send again. While recording works it probes
  // now and then too, so a store that stopped taking writes is seen before a delivery is refused.
  /** Set while the last delivery could not be recorded and nothing was recorded since. */
  let failing: { bytes: number; generation: number } | undefined;
  let generation = 0;
  let probing: Promise<boolean> | undefined;
  let probedAt = Number.NEGATIVE_INFINITY;
  const recorded = () => {
    failing = undefined;
  };

  /** Whether the store can record, by a probe when one is due: often while failing, now and then while not. */
  function canRecord(): Promise<boolean> {
    if (probing) return probing;
    const now = failing;
    const since = Date.now() - probedAt;
    // The last probe failed moments ago (else `failing` would be cleared): its answer stands.
    if (now && since < RECORD_PROBE_INTERVAL_MS) return Promise.resolve(false);
    if (!now && since < HEALTHY_PROBE_INTERVAL_MS) return Promise.resolve(true);
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
    record: (delivery) => {
      let result: Promise<"recorded" | "duplicate">;
      try {
        result = record(delivery);
      } catch (error) {
        // A caller that chains on the promise sees the failure there, as from an async function.
        result = Promise.reject(error);
      }
      // The caller still gets the store's own promise; this only watches it.
      const bytes = delivery.payloadBytes?.length ?? delivery.payload.length;
      result.then(recorded, () => {
        failing = { bytes, generation: ++generation };
      });
      return result;
    },
    ready: async () => {
      if (pool.state() === "stopping" || pool.state() === "stopped") return false;
      if (!(await store.ready())) return false;
      return await canRecord();
    },
    depth: () => store.deliveries.depth(),
  };
}
