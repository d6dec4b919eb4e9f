// The engine's view of the durable queue: leased deliveries with per-handler outcomes,
// and keyed scheduled tasks. The embedded SQLite store implements it; a Redis store
// for several replicas implements the same interface.
import type { IncomingDelivery } from "./types.js";
import type { Outcome, ScheduleRequest } from "../handler.js";

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
  /** The payload already parsed (a delivery leased as it was recorded): not parsed again. */
  parsed?: unknown;
}

/** What becomes of a delivery after a run (decided by `decideDelivery`). */
export type DeliveryDecision =
  | { status: "done" }
  | { status: "failed"; retryAt: Date; lastError: string }
  | { status: "dead"; lastError: string };

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

export interface DeliveryQueue {
  /** Lease the next due delivery (queued, retry due, or a lease that expired or whose owner died). */
  claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined>;
  /** Lease up to `max` due deliveries at once, where the store can do that cheaper than one by one. */
  claimDeliveries?(leaseMs: number, max: number): Promise<ClaimedDelivery[]>;
  /**
   * Record a new delivery already leased to the caller, who has a free worker: durable once
   * resolved (as `DeliveryIntake.record`) and never queued, so it is neither claimed nor read
   * back. "duplicate" as `record`; a duplicate is not leased.
   */
  recordLeased?(delivery: IncomingDelivery, leaseMs: number): Promise<ClaimedDelivery | "duplicate">;
  recordOutcome(token: string, deliveryId: string, handler: string, outcome: Outcome, seconds: number): Promise<boolean>;
  finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean>;
  listDeliveries(filter?: DeliveryFilter): Promise<StoredDelivery[]>;
  getDelivery(id: string): Promise<DeliveryRecord | undefined>;
  /** Queue a stored delivery again for every handler (outcomes cleared). False when unknown or running. */
  replayDelivery(id: string): Promise<boolean>;
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

export type TaskDecision = { status: "done" } | { status: "retry"; retryAt: Date; lastError: string } | { status: "dead"; lastError: string };

export interface TaskQueue {
  scheduleTask(handler: string, request: ScheduleRequest): Promise<void>;
  cancelTask(handler: string, key: string): Promise<void>;
  claimTask(leaseMs: number): Promise<ClaimedTask | undefined>;
  finishTask(claim: ClaimedTask, decision: TaskDecision): Promise<void>;
  listTasks(): Promise<StoredTask[]>;
}

/** Leases shared by deliveries and tasks. */
export interface LeaseControl {
  renewLease(token: string, leaseMs: number): Promise<boolean>;
  /** Give leased work back to the queue untouched (graceful shutdown ran out of time). */
  releaseLease(token: string): Promise<void>;
  /** Deliveries queued, awaiting a retry or running, plus tasks running or due by `now`. Zero = idle. */
  pendingWork(now: Date): Promise<number>;
  /** Earliest time any queued delivery, retry or task becomes due. */
  nextDueAt(): Promise<Date | undefined>;
  /** Work leased by a process on this host that has died goes back to the queue. Returns how many. */
  recoverOrphans(): Promise<number>;
}

/** Housekeeping the engine runs at start and then hourly. */
export interface Maintenance {
  /** Delete deliveries finished `done` before `before` (dead letters stay until replayed or removed by hand). */
  purgeFinished(before: Date): Promise<number>;
  /** Reclaim space of expired handler key/value entries. */
  purgeExpired(): Promise<number>;
}

export interface EngineStore extends DeliveryQueue, TaskQueue, LeaseControl, Maintenance {}
