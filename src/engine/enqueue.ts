// The engine's side of the intake: a delivery is recorded in the store's queue and the pool is
// woken to claim it. One that no handler takes (a job queued, a check run created, an event only
// another app of the installation wants) is recorded done instead: kept for the console and
// `deliveries replay`, never queued, claimed or run.
import type { DeliveryIntake } from "../intake/delivery-intake.js";
import type { StewardStore } from "../store/contract.js";
import type { IncomingDelivery } from "../store/records.js";
import type { WorkerPool } from "./pool.js";
import { createRecordingHealth, type ProbeIntervals } from "./readiness.js";

export function createEnqueue(
  store: Pick<StewardStore, "deliveries" | "ready" | "canRecord">,
  pool: Pick<WorkerPool, "state" | "wake">,
  /** Whether some handler (or the engine itself) takes the delivery. */
  taken: (delivery: IncomingDelivery) => boolean,
  probeIntervals?: ProbeIntervals,
): DeliveryIntake {
  const health = createRecordingHealth(store, probeIntervals);
  return {
    async record(delivery) {
      const settled = !taken(delivery);
      let result: "recorded" | "duplicate";
      try {
        result = await store.deliveries.record(settled ? { ...delivery, settled } : delivery);
      } catch (error) {
        health.failed(Buffer.byteLength(delivery.payload));
        throw error;
      }
      health.recorded();
      if (result === "recorded" && !settled) pool.wake();
      return result;
    },
    async ready() {
      const state = pool.state();
      return state !== "stopping" && state !== "stopped" && (await health.ready());
    },
    depth: () => store.deliveries.depth(),
  };
}
