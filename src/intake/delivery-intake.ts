// The intake's view of the durable queue: the engine implements it (over the store's
// `deliveries` part, src/store/contract.ts) whichever backend the store is. What a delivery
// holds is the store's to say (src/store/records.ts).
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
