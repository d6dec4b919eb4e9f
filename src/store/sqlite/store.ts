// The embedded store: one SQLite file (WAL) in STEWARD_DATA_DIR holding the delivery
// queue, handler outcomes, scheduled tasks, handler state and the audit trail.
import { holdServiceLock, type ServiceLock } from "./service-lock.js";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { BrowsePart, DeliveriesPart, KvPart, LeasesPart, StewardStore, TasksPart } from "../contract.js";
import { migrate } from "./schema.js";
import { SqliteKv } from "./kv.js";
import { INSERT_QUEUED_SQL, SET_MOVED_SEQ_SQL, SqliteDeliveries } from "./deliveries.js";
import { SqliteBrowse } from "./browse.js";
import { SqliteTasks } from "./tasks.js";
import { SqliteLeases } from "./leases.js";
import { startStoreThread, type StoreThread } from "./store-thread.js";
import { adviseAddonPath } from "./page-release.js";
import { PayloadLog } from "./payload-log.js";

export const storeFileName = "steward.db";

export interface SqliteStoreOptions {
  /** process (default): survives kill -9 (WAL, synchronous=NORMAL). power: survives power loss (synchronous=FULL). */
  durability?: "process" | "power";
  logger?: Logger;
  /** Checkpoint the WAL on a worker thread (the service), not in the committing call (CLI, tests). */
  backgroundCheckpoints?: boolean;
  /**
   * The intake spool (spool.ts) for deliveries recorded during a flood, durability `process` only
   * (the service; one process per data directory). Opening moves what a crash left in it.
   */
  spool?: boolean;
  /**
   * False: payloads are kept in SQLite as before the payload log (payload-log.ts), which every
   * store still reads. Default true.
   */
  payloadLog?: boolean;
  /** The payload log rolls to a new file at this size (tests: small, to span several). */
  payloadSegmentBytes?: number;
  /** Audit entries kept, the newest (default DEFAULT_AUDIT_CAP, as the Redis store). */
  auditCap?: number;
  /** The service's store: refuses to open while another service holds the data directory (service-lock.ts). */
  serviceLock?: boolean;
}

/** The payload log's directory inside the data directory. */
export const payloadDirName = "payloads";

/** The spool's own file before schema 13 (spool.ts): read once at open, then removed. */
export const spoolFileName = "intake.spool";

/**
 * Checkpoint on commit (without the thread, or when it failed) less often than the 4 MB
 * default: fewer fsyncs of the main file under intake bursts.
 */
const AUTOCHECKPOINT_PAGES = 4000;
/** With the store thread: a safety net (256 MB of WAL) for when it cannot start the WAL over. */
const BOUND_WITH_THREAD_PAGES = 64000;
/** Above the thread's cycle (store-thread.ts, ~96 MB), so the file is not cut and regrown each time. */
const WAL_SIZE_LIMIT_BYTES = 128 * 1024 * 1024;

/**
 * The connection's page cache, KiB (negative: SQLite's unit for a size in KiB). The driver's
 * build default is 16 MB, which a busy store fills and keeps (native memory, never returned):
 * 14 MB of the service's peak RSS under intake load. At 4 MB the intake rates and the backlog's
 * drain were the same in the bench (the pages a miss reads are in the OS's file cache), and peak
 * RSS went from 157 to 141 MB (test/bench/analysis.md).
 */
const CACHE_SIZE = -4000;

export class SqliteStore implements StewardStore {
  readonly path: string;
  readonly kv: KvPart;
  readonly deliveries: DeliveriesPart;
  readonly browse: BrowsePart;
  readonly tasks: TasksPart;
  readonly leases: LeasesPart;
  readonly #db: Database.Database;
  readonly #deliveries: SqliteDeliveries;
  readonly #thread: StoreThread | undefined;
  readonly #lock: ServiceLock | undefined;
  #closed = false;

  constructor(dataDir: string, opts: SqliteStoreOptions = {}, lock?: ServiceLock) {
    mkdirSync(dataDir, { recursive: true });
    this.#lock = lock;
    this.path = join(dataDir, storeFileName);
    this.#db = new Database(this.path);
    this.#db.pragma("journal_mode = WAL");
    const synchronous = opts.durability === "power" ? "FULL" : "NORMAL";
    this.#db.pragma(`synchronous = ${synchronous}`);
    // Other processes (the CLI, a restarting service) may hold the write lock briefly.
    this.#db.pragma("busy_timeout = 5000");
    this.#db.pragma("foreign_keys = ON");
    this.#db.pragma(`cache_size = ${CACHE_SIZE}`);
    migrate(this.#db);
    // After a checkpoint lets the WAL start over, its file is cut back to this size.
    this.#db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    const spool = opts.spool && opts.durability !== "power" ? { ringPath: join(dataDir, spoolFileName) } : undefined;
    if (opts.backgroundCheckpoints) {
      // The thread checkpoints and starts the WAL over; this bound only matters if it cannot.
      this.#db.pragma(`wal_autocheckpoint = ${BOUND_WITH_THREAD_PAGES}`);
      const fadvise = adviseAddonPath();
      this.#thread = startStoreThread({
        path: this.path,
        synchronous,
        ...(spool ? { moveSql: { insert: INSERT_QUEUED_SQL, mark: SET_MOVED_SEQ_SQL } } : {}),
        ...(fadvise ? { fadvise } : {}),
        onFailure: (error) => {
          if (this.#closed) return;
          this.#db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
          opts.logger?.warn({ err: error }, "store thread failed; checkpoints and spool moves are made on the main connection again");
        },
      });
    } else {
      this.#db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    }
    this.kv = new SqliteKv(this.#db, opts?.auditCap);
    const payloadDir = join(dataDir, payloadDirName);
    const thread = this.#thread;
    const payloads = new PayloadLog(payloadDir, {
      writable: opts.payloadLog ?? true,
      ...(thread ? { pageRelease: { elsewhere: (file: string, offset: number, length: number) => thread.dontNeed(join(payloadDir, file), offset, length) } } : {}),
      sync: opts.durability === "power",
      ...(opts.payloadSegmentBytes !== undefined ? { segmentBytes: opts.payloadSegmentBytes } : {}),
    });
    this.#deliveries = new SqliteDeliveries(this.#db, payloads, this.#thread, spool);
    this.deliveries = this.#deliveries;
    this.browse = new SqliteBrowse(this.#db);
    const tasks = new SqliteTasks(this.#db);
    this.tasks = tasks;
    this.leases = new SqliteLeases(this.#deliveries, tasks);
    opts.logger?.debug({ path: this.path, durability: opts.durability ?? "process" }, "store opened");
  }

  ready(): Promise<boolean> { return this.#closed ? Promise.resolve(false) : this.#deliveries.ready(); }

  canRecord(payloadBytes: number): Promise<boolean> { return this.#closed ? Promise.resolve(false) : this.#deliveries.canRecord(payloadBytes); }

  /** Resolves once no thread of this store can touch its files any more. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deliveries.markClosed();
    const stopping = this.#thread?.stop();
    this.#db.close();
    await stopping;
    this.#lock?.release();
  }
}

export function openSqliteStore(dataDir: string, opts?: SqliteStoreOptions): SqliteStore {
  if (!opts?.serviceLock) return new SqliteStore(dataDir, opts);
  mkdirSync(dataDir, { recursive: true });
  const lock = holdServiceLock(dataDir);
  try {
    return new SqliteStore(dataDir, opts, lock);
  } catch (error) {
    lock.release();
    throw error;
  }
}
