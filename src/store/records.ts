// What the durable queue holds: leased deliveries with per-handler outcomes, and keyed
// scheduled tasks. The operations on them are the store contract (src/store/contract.ts).
// The intake, the engine and the handler contract take these shapes from here.

/** Outcome of one handler run on one delivery (or one scheduled task). */
export type Outcome =
  | { status: "done"; summary?: string }
  | { status: "skipped"; reason: string }
  | {
      status: "failed";
      error: string;
      retryable?: boolean;
      /** GitHub asked to wait until then (a rate limit): the retry comes no sooner and is not counted as a failure. */
      notBefore?: Date;
    };

/** A task the handler asks the durable queue to run later (survives restarts). */
export interface ScheduleRequest {
  /** Dedup key: scheduling the same key twice keeps one task (the later runAt wins only if `replace`). */
  key: string;
  /** When to run it. */
  runAt: Date;
  /** JSON-serialisable data handed back to `onTask`. */
  data: unknown;
  /** Installation the task acts for (its Octokit is handed to `onTask`). */
  installationId?: number;
  /** Replace an existing pending task with the same key (default false: keep the first). */
  replace?: boolean;
}

/** A delivery as the intake hands it to the store to record. */
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
  receivedAt: Date;
  /**
   * No handler takes this delivery (its event and action route to none): it is recorded done and
   * never queued, claimed or run. Kept for the console and `deliveries replay` like any other.
   */
  settled?: boolean;
}

/**
 * queued: waiting for its first run (or replayed). running: leased by a worker.
 * failed: some handler failed, a retry is scheduled. done: every handler done or skipped.
 * dead: attempts exhausted (or a failure that must not be retried); kept with its last error.
 */
export type DeliveryStatus = "queued" | "running" | "done" | "failed" | "dead";

export interface StoredDelivery extends IncomingDelivery {
  status: DeliveryStatus;
  /** Runs of this delivery so far. */
  attempts: number;
  nextRunAt: Date;
  lastError: string | undefined;
  updatedAt: Date;
}

/** The persisted outcome of one handler on one delivery (the latest attempt). */
export interface HandlerOutcomeRecord {
  handler: string;
  status: Outcome["status"];
  /** summary (done), reason (skipped) or error (failed). */
  detail: string | undefined;
  /** Only meaningful for `failed`. */
  retryable: boolean;
  /** Runs of this handler on this delivery so far. */
  attempts: number;
  seconds: number;
  updatedAt: Date;
}

export interface ClaimedDelivery {
  /** Lease token: every write of this run presents it, so a run whose lease was lost writes nothing. */
  token: string;
  delivery: StoredDelivery;
  outcomes: HandlerOutcomeRecord[];
}

/** What becomes of a delivery after a run (decided by `decideDelivery`). */
export type DeliveryDecision =
  { status: "done" } | { status: "failed"; retryAt: Date; lastError: string } | { status: "dead"; lastError: string };

export interface DeliveryFilter {
  status?: DeliveryStatus;
  event?: string;
  /** Received at or after this moment. */
  since?: Date;
  limit?: number;
}

/** One run of one handler on a delivery, as it ended: the history `steward deliveries show` prints. */
export interface AttemptRecord {
  handler: string;
  /** The handler's attempt number on this delivery (counting restarts after a replay from 1). */
  attempt: number;
  status: Outcome["status"];
  detail: string | undefined;
  at: Date;
}

/** A stored delivery as an operator inspects it. */
export interface DeliveryRecord {
  delivery: StoredDelivery;
  outcomes: HandlerOutcomeRecord[];
  /** Every handler run, oldest first (the last ones, when there were very many). */
  attempts: AttemptRecord[];
}

export type TaskStatus = "pending" | "running" | "dead";

export interface StoredTask {
  handler: string;
  key: string;
  runAt: Date;
  data: unknown;
  installationId: number | undefined;
  status: TaskStatus;
  /** Failed runs so far. */
  attempts: number;
  lastError: string | undefined;
}

export interface ClaimedTask {
  token: string;
  /** Generation of the task row: a task re-scheduled while it runs is a new generation and survives this run. */
  generation: number;
  task: StoredTask;
}

export type TaskDecision =
  { status: "done" } | { status: "retry"; retryAt: Date; lastError: string } | { status: "dead"; lastError: string };
