// The handler-facing Store (claims, key/value state with TTLs, audit trail) over SQLite.
import type { Database, Statement } from "better-sqlite3";
import type { AuditEntry, KeyValue } from "../types.js";
import { DEFAULT_AUDIT_CAP, type KvPart } from "../contract.js";
import { inBatches } from "./in-batches.js";
import { writeTransaction } from "./write-transaction.js";

interface KvRow {
  key: string;
  value: string;
  updated_at: number;
}

interface AuditRow {
  kind: string;
  source: string;
  details: string;
  at: number;
}

function encode(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

function expiry(now: number, ttlMs: number | undefined): number | null {
  return ttlMs === undefined ? null : now + Math.max(0, ttlMs);
}

function holds(value: unknown, field: string, equals: string): boolean {
  return typeof value === "object" && value !== null && (value as Record<string, unknown>)[field] === equals;
}

/**
 * A range of the key's index, not a test of every row: a prefix's keys lie between the prefix and
 * the prefix followed by bytes no UTF-8 text has (F4 90: past U+10FFFF), as text compares byte by
 * byte. Handlers list on every delivery of some events, and the table holds weeks of decision facts.
 */
export const LIST_BY_PREFIX_SQL = `SELECT key, value, updated_at FROM kv
  WHERE key >= @prefix AND key < @prefix || CAST(x'F4908080' AS TEXT) AND (expires_at IS NULL OR expires_at > @now) ORDER BY key`;

/**
 * The audit trail's oldest entries beyond the cap, a batch at a time through the primary key (ids
 * only grow: AUTOINCREMENT). Bounded so a store that kept more (one from before the cap, or a
 * lowered cap) catches up over several writes and housekeeping passes rather than in one long
 * delete on the event loop.
 */
export const TRIM_AUDIT_SQL = "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE id <= ? ORDER BY id LIMIT ?)";
/** Entries an audit write removes at most (the steady state removes one). */
const TRIM_ON_WRITE = 100;

/** One batch of the purge: expired entries found through the expiry index (schema.ts), never a scan of the table. */
export const PURGE_EXPIRED_SQL =
  "DELETE FROM kv WHERE key IN (SELECT key FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?)";

export class SqliteKv implements KvPart {
  readonly #dropExpired: Statement;
  readonly #insertIfAbsent: Statement;
  readonly #upsert: Statement;
  readonly #get: Statement;
  readonly #delete: Statement;
  readonly #list: Statement;
  readonly #purge: Statement;
  readonly #audit: (kind: string, source: string, details: string, at: number) => void;
  readonly #trimAudit: Statement;
  readonly #lastAuditId: Statement;
  readonly #claim: (key: string, value: string, expiresAt: number | null, now: number) => boolean;
  readonly #replaceIf: (
    key: string,
    field: string,
    equals: string,
    next: string | undefined,
    expiresAt: number | null,
    now: number,
  ) => boolean;

  /** `auditCap`: the audit entries kept, the newest (as the Redis store's stream keeps about as many). */
  constructor(
    private readonly db: Database,
    private readonly auditCap = DEFAULT_AUDIT_CAP,
  ) {
    this.#dropExpired = db.prepare("DELETE FROM kv WHERE key = ? AND expires_at IS NOT NULL AND expires_at <= ?");
    this.#insertIfAbsent = db.prepare(
      "INSERT OR IGNORE INTO kv (key, value, expires_at, updated_at) VALUES (?, ?, ?, ?)",
    );
    this.#upsert = db.prepare(
      `INSERT INTO kv (key, value, expires_at, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, updated_at = excluded.updated_at`,
    );
    this.#get = db.prepare(
      "SELECT key, value, updated_at FROM kv WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)",
    );
    this.#delete = db.prepare("DELETE FROM kv WHERE key = ?");
    this.#list = db.prepare(LIST_BY_PREFIX_SQL);
    this.#purge = db.prepare(PURGE_EXPIRED_SQL);
    this.#trimAudit = db.prepare(TRIM_AUDIT_SQL);
    this.#lastAuditId = db.prepare("SELECT max(id) FROM audit").pluck();
    const insertAudit = db.prepare("INSERT INTO audit (kind, source, details, at) VALUES (?, ?, ?, ?)");
    // The entry and the trim it makes room with, in one commit.
    this.#audit = writeTransaction(db, (kind: string, source: string, details: string, at: number) => {
      const { lastInsertRowid } = insertAudit.run(kind, source, details, at);
      const cutoff = this.#auditCutoff(Number(lastInsertRowid));
      if (cutoff !== undefined) this.#trimAudit.run(cutoff, TRIM_ON_WRITE);
    });
    this.#claim = writeTransaction(db, (key: string, value: string, expiresAt: number | null, now: number) => {
      this.#dropExpired.run(key, now);
      return this.#insertIfAbsent.run(key, value, expiresAt, now).changes === 1;
    });
    // One IMMEDIATE transaction (write-transaction.ts): no other process writes between the read and the write.
    this.#replaceIf = writeTransaction(
      db,
      (key: string, field: string, equals: string, next: string | undefined, expiresAt: number | null, now: number) => {
        const row = this.#get.get(key, now) as KvRow | undefined;
        if (!row || !holds(JSON.parse(row.value), field, equals)) return false;
        if (next === undefined) this.#delete.run(key);
        else this.#upsert.run(key, next, expiresAt, now);
        return true;
      },
    );
  }

  async claim(key: string, opts: { ttlMs?: number; value?: unknown } = {}): Promise<boolean> {
    const now = Date.now();
    return this.#claim(key, encode(opts.value ?? true), expiry(now, opts.ttlMs), now);
  }

  async release(key: string): Promise<void> {
    this.#delete.run(key);
  }

  async replaceIf(
    key: string,
    expect: { field: string; equals: string },
    next?: { value: unknown; ttlMs?: number },
  ): Promise<boolean> {
    const now = Date.now();
    return this.#replaceIf(
      key,
      expect.field,
      expect.equals,
      next === undefined ? undefined : encode(next.value),
      next === undefined ? null : expiry(now, next.ttlMs),
      now,
    );
  }

  async get<T = unknown>(key: string): Promise<T | undefined> {
    const row = this.#get.get(key, Date.now()) as KvRow | undefined;
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async set(key: string, value: unknown, opts: { ttlMs?: number } = {}): Promise<void> {
    const now = Date.now();
    this.#upsert.run(key, encode(value), expiry(now, opts.ttlMs), now);
  }

  async delete(key: string): Promise<void> {
    this.#delete.run(key);
  }

  async list<T = unknown>(prefix: string): Promise<KeyValue<T>[]> {
    const rows = this.#list.all({ prefix, now: Date.now() }) as KvRow[];
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T, updatedAt: new Date(r.updated_at) }));
  }

  async audit(entry: AuditEntry): Promise<void> {
    const at = entry.at ?? new Date();
    this.#audit(entry.kind, entry.source, JSON.stringify(entry.details ?? {}), at.getTime());
  }

  /** The highest audit id that goes when `last` is the newest: the cap's worth up to it stays. Undefined: nothing goes. */
  #auditCutoff(last: number | null): number | undefined {
    return last === null || last - this.auditCap < 1 ? undefined : last - this.auditCap;
  }

  /** The most recent entries (all, or `limit`), oldest first. */
  async auditLog(filter: { kind?: string; limit?: number } = {}): Promise<Required<AuditEntry>[]> {
    const where = filter.kind === undefined ? "" : "WHERE kind = @kind";
    const limit = filter.limit === undefined ? "" : "LIMIT @limit";
    const rows = this.db.prepare(`SELECT kind, source, details, at FROM audit ${where} ORDER BY id DESC ${limit}`).all({
      ...(filter.kind === undefined ? {} : { kind: filter.kind }),
      ...(filter.limit === undefined ? {} : { limit: filter.limit }),
    }) as AuditRow[];
    return rows.reverse().map((r) => ({
      kind: r.kind,
      source: r.source,
      details: JSON.parse(r.details) as Record<string, unknown>,
      at: new Date(r.at),
    }));
  }

  /**
   * Drop expired entries (they are already invisible; this reclaims space), and audit entries
   * beyond the cap that writes have not trimmed yet.
   */
  async purgeExpired(now = Date.now()): Promise<number> {
    // An hour of expired entries: one per delivery that called the API, decision facts, read-ahead logs.
    const expired = await inBatches((limit) => this.#purge.run(now, limit).changes);
    const cutoff = this.#auditCutoff(this.#lastAuditId.get() as number | null);
    if (cutoff === undefined) return expired;
    return expired + (await inBatches((limit) => this.#trimAudit.run(cutoff, limit).changes));
  }
}
