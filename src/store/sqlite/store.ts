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
import { Checkpointer } from "./checkpointer.js";

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
 * Pages the write-ahead log grows to before a commit checkpoints it (SQLite's default is 1,000,
 * 4 MB), syncing the log and the file on the event loop. A delivery's record, claim and finish add
 * about 130 KB to the log. In the service a thread copies the log as it grows (checkpointer.ts), so
 * this checkpoint finds little left to copy and mostly restarts the log; elsewhere (the CLI) it is
 * the only one. At 64 MB the event loop pays it every few hundred deliveries
 * (docs/decisions/0017-sqlite-checkpoints-in-a-thread.md). A commit's durability does not depend on it.
 */
const WAL_PAGES_BEFORE_CHECKPOINT = 16_000;

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
  readonly #checkpointer: Checkpointer | undefined;
  #closed = false;

  constructor(dataDir: string, opts: SqliteStoreOptions = {}) {
    mkdirSync(dataDir, { recursive: true });
    this.path = join(dataDir, storeFileName);
    this.#lock = opts.serviceLock ? holdServiceLock(dataDir) : undefined;
    try {
      this.#db = new Database(this.path);
      try {
        this.#db.pragma("journal_mode = WAL");
        this.#db.pragma(`synchronous = ${opts.durability === "power" ? "FULL" : "NORMAL"}`);
        // Another process (the CLI, a restarting service) may hold the write lock briefly.
        this.#db.pragma("busy_timeout = 5000");
        this.#db.pragma(`cache_size = ${CACHE_SIZE}`);
        this.#db.pragma(`wal_autocheckpoint = ${WAL_PAGES_BEFORE_CHECKPOINT}`);
        openSchema(this.#db, dataDir);
      } catch (error) {
        this.#db.close();
        throw error;
      }
    } catch (error) {
      this.#lock?.release();
      throw error;
    }
    this.kv = new SqliteKv(this.#db, opts.auditCap);
    this.#deliveries = new SqliteDeliveries(this.#db);
    this.deliveries = this.#deliveries;
    this.browse = new SqliteBrowse(this.#db);
    if (opts.serviceLock)
      this.#checkpointer = new Checkpointer(this.path, opts.durability === "power" ? "FULL" : "NORMAL", (error) =>
        opts.logger?.warn({ err: error }, "the store's checkpoint thread stopped; checkpoints run in commits"),
      );
    const tasks = new SqliteTasks(this.#db);
    this.tasks = tasks;
    this.leases = new SqliteLeases(this.#deliveries, tasks);
    opts.logger?.debug({ path: this.path, durability: opts.durability ?? "process" }, "store opened");
  }

  ready(): Promise<boolean> {
    return this.#closed ? Promise.resolve(false) : this.#deliveries.ready();
  }

  canRecord(payloadBytes: number): Promise<boolean> {
    return this.#closed ? Promise.resolve(false) : this.#deliveries.canRecord(payloadBytes);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deliveries.markClosed();
    await this.#checkpointer?.stop();
    this.#db.close();
    this.#lock?.release();
  }
}

export function openSqliteStore(dataDir: string, opts?: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(dataDir, opts);
}
