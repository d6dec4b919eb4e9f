// Opening the connection pool of the PostgreSQL store: TLS options as libpq names them
// (sslmode, sslrootcert, sslcert, sslkey, read by pg's connection-string support with libpq's
// meaning of each mode), a pool that fails fast when the server is gone (the intake answers
// 503) instead of queueing forever, and a description of the server without credentials.
import pg from "pg";
import type { Logger } from "pino";

/** `postgres://host:port/database` without user or password: the only form of the URL that may be logged. */
export function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    return `postgres://${u.host || "localhost"}${u.pathname && u.pathname !== "/" ? u.pathname : ""}`;
  } catch {
    return "postgres (unparseable URL)";
  }
}

/**
 * The URL pg is given: sslmode keeps libpq's meaning (`require` encrypts without checking the
 * certificate, `verify-ca` checks it against sslrootcert, `verify-full` the host name too)
 * unless the URL itself chose with `uselibpqcompat`.
 */
export function libpqUrl(url: string): string {
  const u = new URL(url);
  if (u.searchParams.has("sslmode") && !u.searchParams.has("uselibpqcompat"))
    u.searchParams.set("uselibpqcompat", "true");
  return u.toString();
}

export interface PoolOptions {
  /** Connections at most (default 10). */
  max?: number;
  /** Shown in pg_stat_activity. */
  name: string;
}

export function createPool(url: string, opts: PoolOptions, logger: Logger | undefined): pg.Pool {
  const where = describePostgresUrl(url);
  const pool = new pg.Pool({
    connectionString: libpqUrl(url),
    max: opts.max ?? 10,
    application_name: opts.name,
    // A server that does not answer fails the caller (a delivery is answered 503, GitHub keeps
    // it redeliverable) rather than holding the request until GitHub gives up.
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
  });
  let lastLogged = 0;
  // An idle connection the server closed (restart, pg_terminate_backend) is dropped by the pool
  // and replaced on the next query; without a listener the error would end the process.
  pool.on("error", (e: Error) => {
    if (Date.now() - lastLogged < 5_000) return;
    lastLogged = Date.now();
    logger?.warn({ postgres: where, err: { message: e.message } }, "postgres connection lost");
  });
  return pool;
}

/** Connect once and ask the server's version; on failure the error names the server, never its credentials. */
export async function checkConnection(pool: pg.Pool, url: string): Promise<number> {
  try {
    const { rows } = await pool.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
    return Number(rows[0]!.v);
  } catch (e) {
    throw new Error(`cannot connect to PostgreSQL at ${describePostgresUrl(url)}: ${(e as Error).message}`);
  }
}

/** A quoted SQL identifier (schema and channel names come from options, never from deliveries). */
export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
