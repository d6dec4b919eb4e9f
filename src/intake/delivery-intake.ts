// The intake's view of the durable queue: the engine implements it (over the store's
// `deliveries` part, src/store/contract.ts) whichever backend the store is.

export interface IncomingDelivery {
  /** `X-GitHub-Delivery`. */
  id: string;
  /** `X-GitHub-Event`. */
  event: string;
  action: string | undefined;
  installationId: number | undefined;
  /** `owner/name` of payload.repository, when present. */
  repository: string | undefined;
  /** Request headers worth keeping (event, delivery, hook ids, user agent, content type). Never the signature secret. */
  headers: Record<string, string>;
  /** The payload as JSON text (form-encoded deliveries already unwrapped). */
  payload: string;
  /** `payload`'s UTF-8 bytes as received, when the body was the payload (JSON deliveries): stored as they are, not encoded again. */
  payloadBytes?: Buffer;
  receivedAt: Date;
  /**
   * No handler takes this delivery (its event and action route to none): it is recorded done and
   * never queued, claimed or run. Kept for the console and `deliveries replay` like any other.
   */
  settled?: boolean;
}

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
