// The embedded store: one SQLite file (WAL) in STEWARD_DATA_DIR holding the delivery queue,
// handler outcomes, scheduled tasks, handler state and the audit trail. The service and operator
// commands open it alike; the service also holds the directory's lock (service-lock.ts).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { BrowsePart, DeliveriesPart, KvPart, LeasesPart, StewardStore, TasksPart } from "../contract.js";
import { openSchema } from "./schema.js";
import { SqliteKv } from "./kv.js";
import { SqliteDeliveries } from "./deliveries.js";
import { SqliteBrowse } from "./browse.js";
import { SqliteTasks } from "./tasks.js";
import { SqliteLeases } from "./leases.js";
import { holdServiceLock, type ServiceLock } from "./service-lock.js";
import { WalWriteBehind } from "./wal-write-behind.js";
import { Checkpoints } from "./checkpoints.js";

export const storeFileName = "steward.db";

export interface SqliteStoreOptions {
  /**
   * STEWARD_DURABILITY. process (default): a recorded delivery survives kill -9 (WAL,
   * synchronous=NORMAL). power: it survives power loss too (synchronous=FULL, an fsync per commit).
   */
  durability?: "process" | "power";
  logger?: Logger;
  /** Audit entries kept, the newest (default DEFAULT_AUDIT_CAP, as the Redis store). */
  auditCap?: number;
  /** The service's store: refuses to open while another service holds the data directory (service-lock.ts). */
  serviceLock?: boolean;
}

/**
 * The connection's page cache, KiB (negative: SQLite's unit for a size in KiB). The driver's build
 * default (16 MB) is native memory a busy store fills and never returns; the pages a miss reads
 * are in the OS's file cache anyway.
 */
const CACHE_SIZE = -4000;

/**
 * Frames of the write-ahead log not yet copied into the database file that start a copy (a cycle of
 * checkpoints.ts: copied on the event loop, the file synced behind it). Each cycle holds the event
 * loop for its copy alone, so short cycles make short stalls; a page written often is copied
 * once a cycle rather than once a checkpoint
 * (docs/decisions/0031-sqlite-log-copied-in-short-cycles.md).
 */
export const WAL_PAGES_BEFORE_COPY = 1000;

/**
 * Frames in the write-ahead log (copied or not) past which it is caught up by SQLite's usual
 * checkpoint, which syncs the log and the file on the event loop, so that the log restarts; its
 * file holds about this much (64 MB). Large, so that catch-ups are rare and few requests wait on
 * their syncs. A commit's durability does not depend on it. The log's own sync is mostly done by
 * then, behind the writes (wal-write-behind.ts).
 */
export const WAL_PAGES_BEFORE_CHECKPOINT = 16000;

/** At durability "power" (every commit synced, no copy behind): frames not yet copied that start the usual checkpoint. */
const WAL_PAGES_BEFORE_CHECKPOINT_AT_POWER = 4000;

/**
 * SQLite's own checkpoint (usual, inside a commit) bounds the log written outside the group commit;
 * past checkpoints.ts's own bound (half as long again), so it never runs while a cycle holds the log.
 */
const WAL_PAGES_BEFORE_SQLITE_CHECKPOINT = 2 * WAL_PAGES_BEFORE_CHECKPOINT;

/** How long a connection waits for another process's lock (the CLI, a restarting service). */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Switching a file to WAL takes its exclusive lock. A connection that would deadlock with another
 * doing the same (several processes opening a file in rollback mode together: a released file
 * being migrated, a new one) gets SQLITE_BUSY at once, without SQLite's busy handler, so the
 * switch is tried again for as long as the busy timeout.
 */
function enableWal(db: Database.Database): void {
  const until = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== "SQLITE_BUSY" || Date.now() > until) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

export class SqliteStore implements StewardStore {
  readonly path: string;
  readonly kv: KvPart;
  readonly deliveries: DeliveriesPart;
  readonly browse: BrowsePart;
  readonly tasks: TasksPart;
  readonly leases: LeasesPart;
  readonly #db: Database.Database;
  readonly #deliveries: SqliteDeliveries;
  readonly #lock: ServiceLock | undefined;
  readonly #walWriteBehind: WalWriteBehind | undefined;
  #closed = false;
  #checkpointAsked = false;
  readonly #checkpoints: Checkpoints;

  constructor(dataDir: string, opts: SqliteStoreOptions = {}) {
    mkdirSync(dataDir, { recursive: true });
    this.path = join(dataDir, storeFileName);
    this.#lock = opts.serviceLock ? holdServiceLock(dataDir) : undefined;
    try {
      this.#db = new Database(this.path);
      try {
        enableWal(this.#db);
        this.#db.pragma(`synchronous = ${opts.durability === "power" ? "FULL" : "NORMAL"}`);
        // Another process (the CLI, a restarting service) may hold the write lock briefly.
        this.#db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
        this.#db.pragma(`cache_size = ${CACHE_SIZE}`);
        this.#db.pragma(`wal_autocheckpoint = ${WAL_PAGES_BEFORE_SQLITE_CHECKPOINT}`);
        openSchema(this.#db, dataDir);
      } catch (error) {
        this.#db.close();
        throw error;
      }
    } catch (error) {
      this.#lock?.release();
      throw error;
    }
    const power = opts.durability === "power";
    this.#checkpoints = new Checkpoints(
      this.#db,
      this.path,
      {
        copy: WAL_PAGES_BEFORE_COPY,
        restart: WAL_PAGES_BEFORE_CHECKPOINT,
        usual: WAL_PAGES_BEFORE_CHECKPOINT_AT_POWER,
      },
      !power,
      (err) =>
        opts.logger?.error(
          { err },
          "store: the database file could not be synced; not ready until restarted, the log is kept",
        ),
    );
    this.kv = new SqliteKv(this.#db, opts.auditCap);
    // At durability "power" every commit syncs the log already.
    const wal = power ? undefined : new WalWriteBehind(`${this.path}-wal`);
    this.#walWriteBehind = wal;
    this.#deliveries = new SqliteDeliveries(this.#db, () => {
      wal?.afterCommit();
      this.#checkpointSoon();
    });
    this.deliveries = this.#deliveries;
    this.browse = new SqliteBrowse(this.#db);
    const tasks = new SqliteTasks(this.#db);
    this.tasks = tasks;
    this.leases = new SqliteLeases(this.#deliveries, tasks);
    opts.logger?.debug({ path: this.path, durability: opts.durability ?? "process" }, "store opened");
  }

  /** After a group commit: checkpoints in the next turn when enough of the log is not yet copied. */
  #checkpointSoon(): void {
    if (this.#checkpointAsked) return;
    this.#checkpointAsked = true;
    setImmediate(() => {
      this.#checkpointAsked = false;
      if (this.#closed) return;
      try {
        this.#checkpoints.afterCommit();
      } catch {
        // A disk full or a reader in the way: the log is copied at a later commit, or by SQLite's own.
      }
    });
  }

  ready(): Promise<boolean> {
    return this.#unwritable() ? Promise.resolve(false) : this.#deliveries.ready();
  }

  canRecord(payloadBytes: number): Promise<boolean> {
    return this.#unwritable() ? Promise.resolve(false) : this.#deliveries.canRecord(payloadBytes);
  }

  /** Closed, or the database file could not be synced after a checkpoint (checkpoints.ts). */
  #unwritable(): boolean {
    return this.#closed || !this.#checkpoints.healthy;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deliveries.markClosed();
    this.#walWriteBehind?.close();
    this.#checkpoints.closeReader();
    this.#db.close();
    this.#checkpoints.closeFiles();
    this.#lock?.release();
  }
}

export function openSqliteStore(dataDir: string, opts?: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(dataDir, opts);
}
