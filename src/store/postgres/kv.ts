// The handler-facing Store over PostgreSQL: one row a key (value as JSON text, an optional
// expiry that readers honour and housekeeping reclaims), keys in byte order so a prefix is a
// range of the primary key, and the audit trail as a capped append-only table.
import type pg from "pg";
import type { AuditEntry, KeyValue } from "../types.js";
import { DEFAULT_AUDIT_CAP, type KvPart } from "../contract.js";

/** Rows one housekeeping statement deletes at most: short transactions, other work runs between them. */
const PURGE_BATCH = 1_000;

function encode(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

function expiry(now: number, ttlMs: number | undefined): Date | null {
  return ttlMs === undefined ? null : new Date(now + Math.max(1, Math.ceil(ttlMs)));
}

/**
 * The smallest string above every string that starts with `prefix`, in code point order (byte
 * order of UTF-8, the order of COLLATE "C"); undefined when there is none (a prefix of U+10FFFF only).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      // Surrogates are not characters: the code point after U+D7FF is U+E000.
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return points.join("") + String.fromCodePoint(next);
    }
  }
  return undefined;
}

export class PostgresKv implements KvPart {
  constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
    private readonly auditCap = DEFAULT_AUDIT_CAP,
  ) {}

  async claim(key: string, opts: { ttlMs?: number; value?: unknown } = {}): Promise<boolean> {
    const now = Date.now();
    // A claim that expires at once is won by anyone who finds the key free, and leaves nothing behind.
    if (opts.ttlMs !== undefined && opts.ttlMs <= 0) return (await this.get(key)) === undefined;
    const { rowCount } = await this.pool.query(
      `INSERT INTO ${this.s}.kv AS k (key, value, updated_at, expires_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, expires_at = excluded.expires_at
       WHERE k.expires_at IS NOT NULL AND k.expires_at <= $3`,
      [key, encode(opts.value ?? true), new Date(now), expiry(now, opts.ttlMs)],
    );
    return rowCount === 1;
  }

  async release(key: string): Promise<void> {
    await this.delete(key);
  }

  async replaceIf(
    key: string,
    expect: { field: string; equals: string },
    next?: { value: unknown; ttlMs?: number },
  ): Promise<boolean> {
    const now = Date.now();
    const live = `key = $1 AND (expires_at IS NULL OR expires_at > $2)
      AND json_typeof(value::json) = 'object' AND (value::json ->> $3) = $4`;
    const { rowCount } =
      next === undefined
        ? await this.pool.query(`DELETE FROM ${this.s}.kv WHERE ${live}`, [
            key,
            new Date(now),
            expect.field,
            expect.equals,
          ])
        : await this.pool.query(`UPDATE ${this.s}.kv SET value = $5, updated_at = $2, expires_at = $6 WHERE ${live}`, [
            key,
            new Date(now),
            expect.field,
            expect.equals,
            encode(next.value),
            expiry(now, next.ttlMs),
          ]);
    return rowCount === 1;
  }

  async get<T = unknown>(key: string): Promise<T | undefined> {
    const { rows } = await this.pool.query<{ value: string }>(
      `SELECT value FROM ${this.s}.kv WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)`,
      [key, new Date()],
    );
    return rows.length === 0 ? undefined : (JSON.parse(rows[0]!.value) as T);
  }

  async set(key: string, value: unknown, opts: { ttlMs?: number } = {}): Promise<void> {
    if (opts.ttlMs !== undefined && opts.ttlMs <= 0) return this.delete(key);
    const now = Date.now();
    await this.pool.query(
      `INSERT INTO ${this.s}.kv (key, value, updated_at, expires_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
      [key, encode(value), new Date(now), expiry(now, opts.ttlMs)],
    );
  }

  async delete(key: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.s}.kv WHERE key = $1`, [key]);
  }

  async list<T = unknown>(prefix: string): Promise<KeyValue<T>[]> {
    const end = prefixEnd(prefix);
    const { rows } = await this.pool.query<{ key: string; value: string; updated_at: Date }>(
      `SELECT key, value, updated_at FROM ${this.s}.kv
       WHERE key >= $1 AND ($2::text IS NULL OR key < $2) AND (expires_at IS NULL OR expires_at > $3)
       ORDER BY key`,
      [prefix, end ?? null, new Date()],
    );
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T, updatedAt: r.updated_at }));
  }

  /** Expired entries and audit entries beyond the cap, in batches of short transactions. */
  async purgeExpired(): Promise<number> {
    let removed = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM ${this.s}.kv WHERE key IN (
           SELECT key FROM ${this.s}.kv WHERE expires_at <= $1 LIMIT ${PURGE_BATCH} FOR UPDATE SKIP LOCKED)`,
        [new Date()],
      );
      removed += rowCount ?? 0;
      if ((rowCount ?? 0) < PURGE_BATCH) break;
    }
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM ${this.s}.audit WHERE seq IN (
           SELECT seq FROM ${this.s}.audit
           WHERE seq <= (SELECT seq FROM ${this.s}.audit ORDER BY seq DESC OFFSET $1 LIMIT 1)
           ORDER BY seq LIMIT ${PURGE_BATCH})`,
        [this.auditCap],
      );
      removed += rowCount ?? 0;
      if ((rowCount ?? 0) < PURGE_BATCH) break;
    }
    return removed;
  }

  async audit(entry: AuditEntry): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.s}.audit (kind, source, details, at) VALUES ($1, $2, $3, $4)`, [
      entry.kind,
      entry.source,
      JSON.stringify(entry.details ?? {}),
      entry.at ?? new Date(),
    ]);
  }

  /** The most recent entries (all kept, or `limit`), oldest first. */
  async auditLog(filter: { kind?: string; limit?: number } = {}): Promise<Required<AuditEntry>[]> {
    const limit = filter.limit ?? null;
    const { rows } = await this.pool.query<{ kind: string; source: string; details: string; at: Date }>(
      `SELECT kind, source, details, at FROM (
         SELECT * FROM ${this.s}.audit WHERE ($1::text IS NULL OR kind = $1) ORDER BY seq DESC LIMIT $2
       ) newest ORDER BY seq`,
      [filter.kind ?? null, limit],
    );
    return rows.map((r) => ({
      kind: r.kind,
      source: r.source,
      details: JSON.parse(r.details) as Record<string, unknown>,
      at: r.at,
    }));
  }
}
