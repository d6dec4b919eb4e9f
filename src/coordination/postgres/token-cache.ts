// Installation tokens shared by every replica through PostgreSQL (the sharing itself:
// ../shared-token-cache.ts). Sealed tokens are rows of `tokens` with the token's expiry; a mint
// lease is a row of `leases`; a replica waiting for another's mint is woken by a notice when
// the token is stored.
import type pg from "pg";
import {
  createSealedTokenCache,
  type SealedTokenCacheOptions,
  type SealedTokenStore,
  type SharedTokenCache,
} from "../shared-token-cache.js";
import type { Notices } from "./notices.js";

export { MINT_LEASE_MS, type SharedTokenCache } from "../shared-token-cache.js";

/** Longest sleep waiting for another replica's token without a notice (one lost). */
const NOTICE_WAIT_MS = 500;

export interface PostgresTokenCacheOptions extends SealedTokenCacheOptions {
  pool: pg.Pool;
  /** Quoted schema name. */
  s: string;
  notices: Notices;
}

/** `n` milliseconds (an integer parameter or column) as an interval. */
const ms = (n: string) => `make_interval(secs => (${n})::integer / 1000.0)`;

/** Sealed tokens (rows of `tokens`) and mint leases (rows of `leases`) in schema `s`. */
export function postgresSealedTokens(pool: pg.Pool, s: string, notices: Notices): SealedTokenStore {
  const sql = {
    read: `SELECT sealed FROM ${s}.tokens WHERE name = $1 AND expires_at > clock_timestamp()`,
    // Expired rows of other keys go with each write: the table holds about one row per installation.
    write: `WITH gone AS (DELETE FROM ${s}.tokens WHERE expires_at < clock_timestamp() AND name <> $1)
      INSERT INTO ${s}.tokens (name, sealed, expires_at) VALUES ($1, $2, clock_timestamp() + ${ms("$3")})
      ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, expires_at = excluded.expires_at`,
    acquire: `INSERT INTO ${s}.leases AS l (name, holder, expires_at) VALUES ($1, $2, clock_timestamp() + ${ms("$3")})
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE l.expires_at <= clock_timestamp() OR l.holder = excluded.holder
      RETURNING 1`,
    renew: `UPDATE ${s}.leases SET expires_at = clock_timestamp() + ${ms("$3")} WHERE name = $1 AND holder = $2`,
    release: `DELETE FROM ${s}.leases WHERE name = $1 AND holder = $2`,
  };
  return {
    name: "postgres",
    names: (id) => ({ token: `token:${id}`, lease: `token-mint:${id}` }),
    read: async (token) => (await pool.query<{ sealed: string }>(sql.read, [token])).rows[0]?.sealed,
    async write(token, sealed, ttlMs) {
      await pool.query(sql.write, [token, sealed, ttlMs]);
      void notices.notify(token);
    },
    acquire: async (lease, owner, ttlMs) => Boolean((await pool.query(sql.acquire, [lease, owner, ttlMs])).rowCount),
    renew: (lease, owner, ttlMs) => pool.query(sql.renew, [lease, owner, ttlMs]),
    release: (lease, owner) => pool.query(sql.release, [lease, owner]),
    awaitToken: (token) => notices.wait(token, NOTICE_WAIT_MS, []),
  };
}

export function createPostgresTokenCache(opts: PostgresTokenCacheOptions): SharedTokenCache {
  const { pool, s, notices, ...rest } = opts;
  return createSealedTokenCache(postgresSealedTokens(pool, s, notices), rest);
}
