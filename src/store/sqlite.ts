// The embedded store: one SQLite file (WAL) in STEWARD_DATA_DIR holding the delivery
// queue, handler outcomes, scheduled tasks, handler state and the audit trail.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { Outcome, ScheduleRequest } from "../handler.js";
import type { DeliveryIntake, IncomingDelivery } from "../queue/types.js";
import type {
  ClaimedDelivery,
  ClaimedTask,
  DeliveryDecision,
  DeliveryFilter,
  DeliveryRecord,
  EngineStore,
  HandlerOutcomeRecord,
  StoredDelivery,
  StoredTask,
  TaskDecision,
} from "../queue/engine-types.js";
import type { AuditEntry, KeyValue, Store } from "./types.js";
import { migrate } from "./schema.js";
import { SqliteKv } from "./sqlite-kv.js";
import { SqliteDeliveries } from "./sqlite-deliveries.js";
import { SqliteBrowse } from "./sqlite-browse.js";
import type { ActivityRow, DeliveryBrowser, DeliveryPage, DeliveryQuery } from "./browse.js";
import { SqliteTasks } from "./sqlite-tasks.js";
import { startCheckpointer, type Checkpointer } from "./checkpointer.js";

export const storeFileName = "steward.db";

export interface SqliteStoreOptions {
  /** process (default): survives kill -9 (WAL, synchronous=NORMAL). power: survives power loss (synchronous=FULL). */
  durability?: "process" | "power";
  logger?: Logger;
  /** Checkpoint the WAL on a worker thread (the service), not in the committing call (CLI, tests). */
  backgroundCheckpoints?: boolean;
}

/**
 * Checkpoint on commit (without the thread, or when it failed) less often than the 4 MB
 * default: fewer fsyncs of the main file under intake bursts.
 */
const AUTOCHECKPOINT_PAGES = 4000;
/** With the checkpoint thread: a safety net (256 MB of WAL) for when it cannot start the WAL over. */
const BOUND_WITH_THREAD_PAGES = 64000;
/** Above the thread's cycle (checkpointer.ts, ~96 MB), so the file is not cut and regrown each time. */
const WAL_SIZE_LIMIT_BYTES = 128 * 1024 * 1024;

export class SqliteStore implements Store, DeliveryIntake, EngineStore, DeliveryBrowser {
  readonly path: string;
  readonly #db: Database.Database;
  readonly #kv: SqliteKv;
  readonly #deliveries: SqliteDeliveries;
  readonly #tasks: SqliteTasks;
  #browse: SqliteBrowse | undefined;
  readonly #checkpointer: Checkpointer | undefined;
  #closed = false;

  constructor(dataDir: string, opts: SqliteStoreOptions = {}) {
    mkdirSync(dataDir, { recursive: true });
    this.path = join(dataDir, storeFileName);
    this.#db = new Database(this.path);
    this.#db.pragma("journal_mode = WAL");
    const synchronous = opts.durability === "power" ? "FULL" : "NORMAL";
    this.#db.pragma(`synchronous = ${synchronous}`);
    // Other processes (the CLI, a restarting service) may hold the write lock briefly.
    this.#db.pragma("busy_timeout = 5000");
    this.#db.pragma("foreign_keys = ON");
    migrate(this.#db);
    // After a checkpoint lets the WAL start over, its file is cut back to this size.
    this.#db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    if (opts.backgroundCheckpoints) {
      // The thread checkpoints and starts the WAL over; this bound only matters if it cannot.
      this.#db.pragma(`wal_autocheckpoint = ${BOUND_WITH_THREAD_PAGES}`);
      this.#checkpointer = startCheckpointer({
        path: this.path,
        synchronous,
        onFailure: (error) => {
          if (this.#closed) return;
          this.#db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
          opts.logger?.warn({ err: error }, "checkpoint thread failed; checkpointing on commit again");
        },
      });
    } else {
      this.#db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    }
    this.#kv = new SqliteKv(this.#db);
    this.#deliveries = new SqliteDeliveries(this.#db, this.#checkpointer);
    this.#tasks = new SqliteTasks(this.#db);
    opts.logger?.debug({ path: this.path, durability: opts.durability ?? "process" }, "store opened");
  }

  // Store (handler-facing)
  claim(key: string, opts?: { ttlMs?: number; value?: unknown }): Promise<boolean> { return this.#kv.claim(key, opts); }
  release(key: string): Promise<void> { return this.#kv.release(key); }
  get<T = unknown>(key: string): Promise<T | undefined> { return this.#kv.get<T>(key); }
  set(key: string, value: unknown, opts?: { ttlMs?: number }): Promise<void> { return this.#kv.set(key, value, opts); }
  delete(key: string): Promise<void> { return this.#kv.delete(key); }
  list<T = unknown>(prefix: string): Promise<KeyValue<T>[]> { return this.#kv.list<T>(prefix); }
  audit(entry: AuditEntry): Promise<void> { return this.#kv.audit(entry); }
  auditLog(filter?: { kind?: string; limit?: number }): Promise<Required<AuditEntry>[]> { return this.#kv.auditLog(filter); }

  // DeliveryIntake
  record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> { return this.#deliveries.record(delivery); }
  ready(): Promise<boolean> { return this.#closed ? Promise.resolve(false) : this.#deliveries.ready(); }
  depth(): Promise<number> { return this.#deliveries.depth(); }

  // DeliveryQueue
  claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined> { return this.#deliveries.claimDelivery(leaseMs); }
  claimDeliveries(leaseMs: number, max: number): Promise<ClaimedDelivery[]> { return this.#deliveries.claimDeliveries(leaseMs, max); }
  recordLeased(delivery: IncomingDelivery, leaseMs: number): Promise<ClaimedDelivery | "duplicate"> {
    return this.#deliveries.recordLeased(delivery, leaseMs);
  }
  recordOutcome(token: string, deliveryId: string, handler: string, outcome: Outcome, seconds: number): Promise<boolean> {
    return this.#deliveries.recordOutcome(token, deliveryId, handler, outcome, seconds);
  }
  finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean> {
    return this.#deliveries.finishDelivery(token, deliveryId, decision);
  }
  listDeliveries(filter?: DeliveryFilter): Promise<StoredDelivery[]> { return this.#deliveries.listDeliveries(filter); }
  getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    return this.#deliveries.getDelivery(id);
  }
  replayDelivery(id: string): Promise<boolean> { return this.#deliveries.replayDelivery(id); }
  // DeliveryBrowser (the console)
  browseDeliveries(query: DeliveryQuery): Promise<DeliveryPage> { return (this.#browse ??= new SqliteBrowse(this.#db)).browseDeliveries(query); }
  deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> { return (this.#browse ??= new SqliteBrowse(this.#db)).deliveryActivity(since, repositories); }
  countDead(repositories?: readonly string[]): Promise<number> { return (this.#browse ??= new SqliteBrowse(this.#db)).countDead(repositories); }

  // TaskQueue
  scheduleTask(handler: string, request: ScheduleRequest): Promise<void> { return this.#tasks.scheduleTask(handler, request); }
  cancelTask(handler: string, key: string): Promise<void> { return this.#tasks.cancelTask(handler, key); }
  claimTask(leaseMs: number): Promise<ClaimedTask | undefined> { return this.#tasks.claimTask(leaseMs); }
  finishTask(claim: ClaimedTask, decision: TaskDecision): Promise<void> { return this.#tasks.finishTask(claim, decision); }
  listTasks(): Promise<StoredTask[]> { return this.#tasks.listTasks(); }

  // Leases and idleness
  async renewLease(token: string, leaseMs: number): Promise<boolean> {
    const until = Date.now() + leaseMs;
    return this.#deliveries.renewLease(token, until) || this.#tasks.renewLease(token, until);
  }
  async releaseLease(token: string): Promise<void> {
    this.#deliveries.releaseLease(token);
    this.#tasks.releaseLease(token);
  }
  async pendingWork(now: Date): Promise<number> { return this.#deliveries.pending() + this.#tasks.pending(now.getTime()); }
  async nextDueAt(): Promise<Date | undefined> {
    const times = [this.#deliveries.nextDueAt(), this.#tasks.nextDueAt()].filter((t): t is number => t !== undefined);
    return times.length ? new Date(Math.min(...times)) : undefined;
  }

  /** Work leased by a process on this host that has died goes back to the queue. Returns how many. */
  async recoverOrphans(): Promise<number> { return this.#deliveries.recoverOrphans() + this.#tasks.recoverOrphans(); }
  // Maintenance
  async purgeExpired(): Promise<number> { return this.#kv.purgeExpired(); }
  async purgeFinished(before: Date): Promise<number> { return this.#deliveries.purgeFinished(before.getTime()); }

  /** Resolves once no thread of this store can touch its files any more. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deliveries.markClosed();
    const stopping = this.#checkpointer?.stop();
    this.#db.close();
    await stopping;
  }
}

export function openSqliteStore(dataDir: string, opts?: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(dataDir, opts);
}
