// The scale-out store: the same queue, tasks, handler state and audit trail as the embedded
// SQLite store, kept in one Redis shared by several Steward replicas. Every step that
// touches more than one key is a Lua script, so replicas never lease the same work twice;
// leases expire, so the work of a replica that died is taken back by another.
//
// Durability: record() resolves once Redis acknowledged the write. That survives a crash of
// Steward; it survives a crash of Redis only with an append-only file (appendonly yes,
// appendfsync everysec loses at most ~1 s of writes, always loses none). See docs/scale-out.md.
import type { RedisClient } from "./connect.js";
import type { Logger } from "pino";
import {
  DEFAULT_AUDIT_CAP,
  type BrowsePart,
  type DeliveriesPart,
  type KvPart,
  type LeasesPart,
  type StewardStore,
  type TasksPart,
} from "../contract.js";
import { connectRedis, describeRedisUrl, persistenceOf, warnAboutPersistence } from "./connect.js";
import { checkRedisPrefix, defaultRedisPrefix, RedisKeys } from "./keys.js";
import { holdsEarlierLayout, RedisDeliveries } from "./deliveries.js";
import { RedisBrowse } from "./browse.js";
import { RedisTasks } from "./tasks.js";
import { RedisLeases } from "./leases.js";
import { RedisKv } from "./kv.js";

export interface RedisStoreOptions {
  /** Prefix of every key (default `{steward}:`, a hash tag). Replicas of one deployment share it. */
  prefix?: string;
  logger?: Logger;
  /** Approximate number of audit entries kept (default 100 000). */
  auditCap?: number;
}

/** The probe key lives this long; a probe overwrites it. */
const RECORD_PROBE_TTL_MS = 60_000;

export class RedisStore implements StewardStore {
  /** The server, without credentials (for logs and status output). */
  readonly where: string;
  readonly keys: RedisKeys;
  readonly kv: KvPart;
  readonly deliveries: DeliveriesPart;
  readonly browse: RedisBrowse;
  readonly tasks: TasksPart;
  readonly leases: LeasesPart;
  readonly #client: RedisClient;
  readonly #deliveries: RedisDeliveries;
  #closed = false;

  constructor(client: RedisClient, where: string, opts: RedisStoreOptions = {}) {
    this.#client = client;
    this.where = where;
    this.keys = new RedisKeys(opts.prefix ?? defaultRedisPrefix);
    this.kv = new RedisKv(client, this.keys, opts.auditCap ?? DEFAULT_AUDIT_CAP);
    const leases = new RedisLeases(client, this.keys);
    this.leases = leases;
    this.#deliveries = new RedisDeliveries(client, this.keys, leases);
    this.deliveries = this.#deliveries;
    this.tasks = new RedisTasks(client, this.keys, leases);
    this.browse = new RedisBrowse(client, this.keys);
  }

  async ready(): Promise<boolean> {
    if (this.#closed || this.#client.status !== "ready") return false;
    try {
      return (await this.#client.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  /**
   * StewardStore.canRecord: a short-lived key written, as recording writes, so a Redis that answers
   * PING but refuses writes (out of memory, a failed snapshot under stop-writes-on-bgsave-error,
   * a read-only replica) is not taken for one that can record. The payload's size does not matter
   * to Redis's refusals; a small value is written.
   */
  async canRecord(_payloadBytes: number): Promise<boolean> {
    if (!(await this.ready())) return false;
    try {
      return (await this.#client.set(this.keys.recordProbe, String(Date.now()), "PX", RECORD_PROBE_TTL_MS)) === "OK";
    } catch {
      return false;
    }
  }

  /** Waits for replies to commands already sent, then disconnects. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deliveries.markClosed();
    try {
      await this.#client.quit();
    } catch {
      this.#client.disconnect();
    }
  }
}

/** Connect (failing fast with a message that names the server but never its credentials) and open the store. */
export async function openRedisStore(url: string, opts: RedisStoreOptions = {}): Promise<RedisStore> {
  const where = describeRedisUrl(url);
  const prefix = checkRedisPrefix(opts.prefix ?? defaultRedisPrefix);
  const client = await connectRedis(url, opts.logger, "steward-store");
  if (await holdsEarlierLayout(client, new RedisKeys(prefix))) {
    client.disconnect();
    throw new Error(
      `Redis at ${where} holds deliveries under ${prefix} in the layout of an earlier Steward, which this version does not read: ` +
        `let that version work off its queue, then delete the keys under ${prefix} (or start on an empty Redis database)`,
    );
  }
  warnAboutPersistence(await persistenceOf(client), where, opts.logger);
  opts.logger?.debug({ redis: where, prefix }, "store opened");
  const store = new RedisStore(client, where, opts);
  await store.browse.prepare();
  return store;
}
