// The intake's view of the durable queue: the engine implements it (enqueue.ts, over the store's
// `deliveries` part) whichever backend the store is.
import type { IncomingDelivery } from "../store/records.js";

export interface DeliveryIntake {
  /**
   * Record a delivery durably. Resolves only once it would survive a kill -9.
   * `duplicate` when this delivery id was recorded before (it is not processed again).
   * Rejects when the store cannot record it (the intake answers 503).
   */
  record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate">;
  /** True while the store and queue are usable (GET /readyz). */
  ready(): Promise<boolean>;
  /** Deliveries waiting or running (metrics). */
  depth(): Promise<number>;
}
