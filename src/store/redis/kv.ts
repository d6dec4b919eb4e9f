// The handler-facing Store over Redis: claims are SET NX with a PX expiry (Redis expires
// them itself), values are JSON strings, a lexicographic zset indexes keys for prefix
// listing, and the audit trail is a capped stream.
import type { RedisClient } from "./connect.js";
import type { AuditEntry, KeyValue } from "../types.js";
import type { RedisKeys } from "./keys.js";
import { defineScript, pipelined, type Script } from "./script.js";
import { DEFAULT_AUDIT_CAP, type KvPart } from "../contract.js";

// KEYS: entry, index. ARGV: key, value json, ttlMs ('' = none)
const claimLua = `
local ok
if ARGV[3] == '' then ok = redis.call('SET', KEYS[1], ARGV[2], 'NX')
else ok = redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) end
if not ok then return 0 end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1`;

// KEYS: entry, index. ARGV: key, value json, ttlMs ('' = none)
const setLua = `
if ARGV[3] == '' then redis.call('SET', KEYS[1], ARGV[2])
else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1`;

// KEYS: entry, index. ARGV: key, field, expected, next value json ('' = delete), ttlMs ('' = none)
const replaceIfLua = `
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local entry = cjson.decode(raw)
if type(entry.v) ~= 'table' or entry.v[ARGV[2]] ~= ARGV[3] then return 0 end
if ARGV[4] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
elseif ARGV[5] == '' then redis.call('SET', KEYS[1], ARGV[4])
else redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5]) end
return 1`;

interface Entry {
  v: unknown;
  /** updatedAt, epoch ms */
  u: number;
}

function encode(value: unknown): string {
  return JSON.stringify({ v: value === undefined ? null : value, u: Date.now() } satisfies Entry);
}

/** The end of a ZRANGEBYLEX range covering every key that starts with `prefix` (0xff never occurs in UTF-8). */
function lexEnd(prefix: string): Buffer {
  return Buffer.concat([Buffer.from(`[${prefix}`, "utf8"), Buffer.from([0xff])]);
}

const page = 500;

export class RedisKv implements KvPart {
  readonly #claim: Script;
  readonly #set: Script;
  readonly #replaceIf: Script;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly auditCap = DEFAULT_AUDIT_CAP,
  ) {
    this.#claim = defineScript(client, "stewardClaimKey", 2, claimLua);
    this.#set = defineScript(client, "stewardSet", 2, setLua);
    this.#replaceIf = defineScript(client, "stewardReplaceIf", 2, replaceIfLua);
  }

  async claim(key: string, opts: { ttlMs?: number; value?: unknown } = {}): Promise<boolean> {
    // A claim that expires at once is won by anyone who finds the key free, and leaves nothing behind.
    if (opts.ttlMs !== undefined && opts.ttlMs <= 0) return (await this.client.exists(this.keys.kv(key))) === 0;
    const ttl = opts.ttlMs === undefined ? "" : Math.ceil(opts.ttlMs);
    return (await this.#claim([this.keys.kv(key), this.keys.kvIndex], [key, encode(opts.value ?? true), ttl])) === 1;
  }

  async release(key: string): Promise<void> {
    await this.delete(key);
  }

  async replaceIf(
    key: string,
    expect: { field: string; equals: string },
    next?: { value: unknown; ttlMs?: number },
  ): Promise<boolean> {
    const value = next === undefined ? "" : encode(next.value);
    const ttl = next?.ttlMs === undefined ? "" : Math.max(1, Math.ceil(next.ttlMs));
    return (
      (await this.#replaceIf(
        [this.keys.kv(key), this.keys.kvIndex],
        [key, expect.field, expect.equals, value, ttl],
      )) === 1
    );
  }

  async get<T = unknown>(key: string): Promise<T | undefined> {
    const raw = await this.client.get(this.keys.kv(key));
    return raw === null ? undefined : ((JSON.parse(raw) as Entry).v as T);
  }

  async set(key: string, value: unknown, opts: { ttlMs?: number } = {}): Promise<void> {
    if (opts.ttlMs !== undefined && opts.ttlMs <= 0) return this.delete(key);
    const ttl = opts.ttlMs === undefined ? "" : Math.ceil(opts.ttlMs);
    await this.#set([this.keys.kv(key), this.keys.kvIndex], [key, encode(value), ttl]);
  }

  async delete(key: string): Promise<void> {
    await this.client.multi().del(this.keys.kv(key)).zrem(this.keys.kvIndex, key).exec();
  }

  async list<T = unknown>(prefix: string): Promise<KeyValue<T>[]> {
    const start = Buffer.from(`[${prefix}`, "utf8");
    const names =
      prefix === ""
        ? await this.client.zrange(this.keys.kvIndex, 0, -1)
        : await this.client.zrangebylex(this.keys.kvIndex, start, lexEnd(prefix));
    const out: KeyValue<T>[] = [];
    for (let i = 0; i < names.length; i += page) {
      const chunk = names.slice(i, i + page);
      const values = await this.client.mget(chunk.map((n) => this.keys.kv(n)));
      chunk.forEach((key, j) => {
        const raw = values[j];
        if (raw === null || raw === undefined) return; // expired: the index is pruned by purgeExpired
        const e = JSON.parse(raw) as Entry;
        out.push({ key, value: e.v as T, updatedAt: new Date(e.u) });
      });
    }
    return out;
  }

  /** Redis expires values itself; this prunes index entries of keys that are gone. */
  async purgeExpired(): Promise<number> {
    let removed = 0;
    let cursor = "0";
    do {
      const [next, flat] = await this.client.zscan(this.keys.kvIndex, cursor, "COUNT", page);
      cursor = next;
      const names = flat.filter((_, i) => i % 2 === 0);
      if (names.length === 0) continue;
      const present = await pipelined<number>(this.client, (p) => names.forEach((n) => p.exists(this.keys.kv(n))));
      const gone = names.filter((_, i) => present[i] === 0);
      if (gone.length) removed += await this.client.zrem(this.keys.kvIndex, ...gone);
    } while (cursor !== "0");
    return removed;
  }

  async audit(entry: AuditEntry): Promise<void> {
    const at = (entry.at ?? new Date()).getTime();
    await this.client.xadd(
      this.keys.audit,
      "MAXLEN",
      "~",
      this.auditCap,
      "*",
      "kind",
      entry.kind,
      "source",
      entry.source,
      "details",
      JSON.stringify(entry.details ?? {}),
      "at",
      String(at),
    );
  }

  /** The most recent entries (all kept, or `limit`), oldest first. */
  async auditLog(filter: { kind?: string; limit?: number } = {}): Promise<Required<AuditEntry>[]> {
    const limit = filter.limit ?? Infinity;
    const found: Required<AuditEntry>[] = [];
    let end = "+";
    while (found.length < limit) {
      const batch = await this.client.xrevrange(this.keys.audit, end, "-", "COUNT", page);
      if (batch.length === 0) break;
      for (const [, fields] of batch) {
        const f: Record<string, string> = {};
        for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
        if (filter.kind !== undefined && f.kind !== filter.kind) continue;
        found.push({
          kind: f.kind!,
          source: f.source!,
          details: JSON.parse(f.details ?? "{}") as Record<string, unknown>,
          at: new Date(Number(f.at)),
        });
        if (found.length >= limit) break;
      }
      if (batch.length < page) break;
      end = `(${batch[batch.length - 1]![0]}`;
    }
    return found.reverse();
  }
}
