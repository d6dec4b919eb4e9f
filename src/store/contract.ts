// The store contract: what every backend (SQLite, Redis) implements in full, as small parts
// each with one reader. Nothing is optional, so no caller probes for a method at run time.
//   kv         handler state, idempotency claims and the audit trail (handlers see a narrow view)
//   deliveries the intake's record, the engine's leased queue, the operator's list/show/replay
//   browse     deliveries read for people (the console), a page at a time over indexes
//   tasks      keyed scheduled tasks
//   leases     leases shared by deliveries and tasks, idleness and orphan recovery
import type {
  IncomingDelivery,
  Outcome,
  ScheduleRequest,
  ClaimedDelivery,
  ClaimedTask,
  DeliveryDecision,
  DeliveryFilter,
  DeliveryRecord,
  StoredDelivery,
  StoredTask,
  TaskDecision,
} from "./records.js";
import type { ActivityRow, DecisionLine, DeliveryPage, DeliveryQuery, DeliverySummary } from "./browse.js";
import type { Store } from "./types.js";

/**
 * Audit entries a store keeps, the newest; older ones go as new ones are written (Redis: about as
 * many, its stream trims whole nodes). Approvals, re-runs and secret writes each add one, so
 * without a bound the trail grows for as long as the service runs.
 */
export const DEFAULT_AUDIT_CAP = 100_000;

export interface KvPart extends Store {
  /** Reclaim space of expired entries, and of audit entries beyond the cap (housekeeping). Returns how many went. */
  purgeExpired(): Promise<number>;
}

export interface DeliveriesPart {
  /**
   * Record a delivery durably. Resolves only once it would survive a kill -9.
   * `duplicate` when this delivery id was recorded before (it is not processed again).
   */
  record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate">;
  /** Deliveries waiting or running (metrics). */
  depth(): Promise<number>;
  /**
   * The earliest next run among deliveries waiting to run (queued, or failed and waiting for a
   * retry), running ones left out: when it lies in the past, the longest-waiting delivery has
   * waited since then (the queue-age gauge). May lie in the future (only retries are waiting).
   */
  oldestDueAt(): Promise<Date | undefined>;
  /** Lease the next due delivery (queued, retry due, or a lease that expired or whose owner died). */
  claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined>;
  /** Lease up to `max` due deliveries, oldest due first. */
  claimDeliveries(leaseMs: number, max: number): Promise<ClaimedDelivery[]>;
  recordOutcome(
    token: string,
    deliveryId: string,
    handler: string,
    outcome: Outcome,
    seconds: number,
  ): Promise<boolean>;
  finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean>;
  listDeliveries(filter?: DeliveryFilter): Promise<StoredDelivery[]>;
  getDelivery(id: string): Promise<DeliveryRecord | undefined>;
  /** Queue a stored delivery again for every handler (outcomes cleared). False when unknown or running. */
  replayDelivery(id: string): Promise<boolean>;
  /** Delete deliveries finished `done` before `before` (dead letters stay until replayed or removed by hand). */
  purgeFinished(before: Date): Promise<number>;
}

/** Deliveries read for people (the console), newest first, a page at a time over indexes. */
export interface BrowsePart {
  browseDeliveries(query: DeliveryQuery): Promise<DeliveryPage>;
  /** Deliveries received since `since`, counted per minute and current status. */
  deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]>;
  countDead(repositories?: readonly string[]): Promise<number>;
  /**
   * Each delivery's handler decisions, one line each in handler order (for the lists; a page's
   * ids, MAX_PAGE at most: more are not read). A delivery no handler ran on has none.
   */
  decisionsOf(ids: readonly string[]): Promise<Map<string, DecisionLine[]>>;
  /** The summaries of these deliveries, in no particular order; unknown ids are left out (MAX_PAGE ids at most: more are not read). */
  summariesOf(ids: readonly string[]): Promise<DeliverySummary[]>;
}

export interface TasksPart {
  scheduleTask(handler: string, request: ScheduleRequest): Promise<void>;
  cancelTask(handler: string, key: string): Promise<void>;
  claimTask(leaseMs: number): Promise<ClaimedTask | undefined>;
  finishTask(claim: ClaimedTask, decision: TaskDecision): Promise<void>;
  listTasks(): Promise<StoredTask[]>;
}

/** Leases shared by deliveries and tasks. */
export interface LeasesPart {
  renewLease(token: string, leaseMs: number): Promise<boolean>;
  /**
   * Give leased work back to the queue untouched (graceful shutdown ran out of time, or a pause
   * holds it): due again now, or at `dueAt` (a task's run time moves to it too).
   */
  releaseLease(token: string, dueAt?: Date): Promise<void>;
  /** Deliveries queued, awaiting a retry or running, plus tasks running or due by `now`. Zero = idle. */
  pendingWork(now: Date): Promise<number>;
  /** Earliest time any queued delivery, retry or task becomes due. */
  nextDueAt(): Promise<Date | undefined>;
  /** Work leased by a process on this host that has died goes back to the queue. Returns how many. */
  recoverOrphans(): Promise<number>;
}

export interface StewardStore {
  readonly kv: KvPart;
  readonly deliveries: DeliveriesPart;
  readonly browse: BrowsePart;
  readonly tasks: TasksPart;
  readonly leases: LeasesPart;
  /** True while the store is open and reachable (GET /readyz). */
  ready(): Promise<boolean>;
  /**
   * A probe write shaped like recording a delivery whose payload is `payloadBytes` long (written
   * and removed at once): true when it succeeded. GET /readyz asks it while the last delivery
   * could not be recorded (disk full, writes refused), so readiness recovers without a delivery.
   */
  canRecord(payloadBytes: number): Promise<boolean>;
  /**
   * `listener` runs when another process queued work (a backend shared by replicas that can
   * tell: PostgreSQL's LISTEN/NOTIFY), so the pool claims at once rather than at its next poll.
   * Absent: other processes' work is found by polling.
   */
  onWork?(listener: () => void): void;
  /** Idempotent; resolves once nothing of the store is in use any more. */
  close(): Promise<void>;
}

const handlerMethods = ["claim", "release", "replaceIf", "get", "set", "delete", "list", "audit", "auditLog"] as const;
// Fails to compile when `Store` gains a method the list above does not hand on.
const everyMethod: Record<Exclude<keyof Store, (typeof handlerMethods)[number]>, never> = {};
void everyMethod;

/**
 * What a handler's context gets: the handler-facing methods of the kv part, bound, and
 * nothing else. The backend object itself never reaches a handler, so a handler cannot
 * reach the queue (finishDelivery) or housekeeping (purgeExpired) even by a cast.
 */
export function handlerStore(kv: Store): Store {
  return Object.freeze(Object.fromEntries(handlerMethods.map((name) => [name, kv[name].bind(kv)])) as unknown as Store);
}
