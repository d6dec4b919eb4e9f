// The PostgreSQL store: the same queue, tasks, handler state and audit trail as the SQLite and
// Redis stores, in one PostgreSQL database shared by any number of Steward replicas. Claims
// use FOR UPDATE SKIP LOCKED, so replicas never lease the same work twice; leases expire, so
// the work of a replica that died is taken back by another; LISTEN/NOTIFY wakes the others
// when work is queued.
//
// Durability: record() resolves once the INSERT committed. With PostgreSQL's default
// synchronous_commit (on), that is after the WAL was flushed: it survives a crash of Steward
// and of the database server.
import type pg from "pg";
import type { Logger } from "pino";
import { DEFAULT_AUDIT_CAP, type KvPart, type LeasesPart, type StewardStore, type TasksPart } from "../contract.js";
import { checkConnection, createPool, describePostgresUrl, ident, libpqUrl } from "./connect.js";
import { migrate } from "./schema.js";
import { PostgresKv } from "./kv.js";
import { PostgresDeliveries } from "./deliveries.js";
import { PostgresBrowse } from "./browse.js";
import { PostgresTasks } from "./tasks.js";
import { PostgresLeases } from "./leases.js";
import { WorkSignal } from "./work-signal.js";

/** Steward's tables live in this schema unless told otherwise; replicas of one deployment share it. */
export const defaultPostgresSchema = "steward";

export interface PostgresStoreOptions {
  /** Schema of Steward's tables (default `steward`), created when missing. */
  schema?: string;
  logger?: Logger;
  /** Number of audit entries kept (default 100 000). */
  auditCap?: number;
  /** Connections of the pool at most (default 10). */
  maxConnections?: number;
  /**
   * What a recorded delivery survives once `record` resolves (STEWARD_DURABILITY, default
   * `process`): `process`, its commit is not waited for its WAL flush (a crash of Steward or a
   * clean restart of the database loses nothing; a crash of the database server or its host can
   * lose the last fraction of a second); `power`, it is (the server's `synchronous_commit`).
   */
  durability?: "process" | "power";
}

export class PostgresStore implements StewardStore {
  /** The server, without credentials (for logs and status output). */
  readonly where: string;
  readonly schema: string;
  readonly kv: KvPart;
  readonly deliveries: PostgresDeliveries;
  readonly browse: PostgresBrowse;
  readonly tasks: TasksPart;
  readonly leases: LeasesPart;
  readonly #pool: pg.Pool;
  readonly #signal: WorkSignal;
  #closing: Promise<void> | undefined;

  constructor(pool: pg.Pool, url: string, opts: PostgresStoreOptions = {}) {
    this.#pool = pool;
    this.where = describePostgresUrl(url);
    this.schema = opts.schema ?? defaultPostgresSchema;
    const s = ident(this.schema);
    const channel = Buffer.from(`steward_work:${this.schema}`).subarray(0, 63).toString();
    this.#signal = new WorkSignal(
      pool,
      {
        connectionString: libpqUrl(url),
        application_name: "steward-wake",
        connectionTimeoutMillis: 5_000,
        keepAlive: true,
      },
      channel,
      opts.logger,
    );
    this.kv = new PostgresKv(pool, s, opts.auditCap ?? DEFAULT_AUDIT_CAP);
    this.deliveries = new PostgresDeliveries(pool, s, this.#signal, opts.durability ?? "process");
    this.tasks = new PostgresTasks(pool, s, this.#signal);
    this.leases = new PostgresLeases(pool, s, this.#signal);
    this.browse = new PostgresBrowse(pool, s);
  }

  /** `listener` runs when another replica queued work (LISTEN/NOTIFY): the engine's pool claims at once. */
  onWork(listener: () => void): void {
    this.#signal.onWork(listener);
  }

  /**
   * What the replica registry saw at its last heartbeat (coordination/postgres/replicas.ts):
   * whether other replicas of the deployment are alive, undefined when it does not know. While
   * none is, queued work notifies no one.
   */
  othersAlive(alive: boolean | undefined): void {
    this.#signal.othersAlive(alive);
  }

  async ready(): Promise<boolean> {
    if (this.#closing) return false;
    try {
      await this.#pool.query("SELECT 1");
      return true;
    } catch {
      return false;
    }
  }

  /**
   * StewardStore.canRecord: a row of the delivery's size written (committed) and removed at once, so a server that answers but refuses writes (read-only, out of disk for its WAL,
   * connections refused) is not taken for one that can record.
   */
  async canRecord(payloadBytes: number): Promise<boolean> {
    if (this.#closing) return false;
    const s = ident(this.schema);
    try {
      await this.#pool.query(`INSERT INTO ${s}.record_probe (body) VALUES (repeat('x', $1::int))`, [
        Math.max(0, Math.floor(payloadBytes)),
      ]);
      await this.#pool.query(`DELETE FROM ${s}.record_probe`);
      return true;
    } catch {
      return false;
    }
  }

  /** Waits for queries already sent, then closes every connection. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.deliveries.markClosed();
      await this.deliveries.drain();
      await this.#signal.close();
      await this.#pool.end().catch(() => undefined);
    })();
    return this.#closing;
  }
}

/**
 * Connect (failing fast with a message that names the server but never its credentials),
 * bring the schema to this version (one replica at a time), and open the store.
 */
export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const schema = opts.schema ?? defaultPostgresSchema;
  const pool = createPool(
    url,
    { name: "steward", ...(opts.maxConnections ? { max: opts.maxConnections } : {}) },
    opts.logger,
  );
  try {
    await checkConnection(pool, url);
    const client = await pool.connect();
    try {
      const applied = await migrate(client, schema);
      if (applied.length)
        opts.logger?.info({ postgres: describePostgresUrl(url), schema, applied }, "postgres schema migrated");
    } finally {
      client.release();
    }
  } catch (e) {
    await pool.end().catch(() => undefined);
    throw e;
  }
  opts.logger?.debug({ postgres: describePostgresUrl(url), schema }, "store opened");
  return new PostgresStore(pool, url, opts);
}
