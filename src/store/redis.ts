// The scale-out store: the same queue, tasks, handler state and audit trail as the embedded
// SQLite store, kept in one Redis shared by several Steward replicas. Every step that
// touches more than one key is a Lua script, so replicas never lease the same work twice;
// leases expire, so the work of a replica that died is taken back by another.
//
// Durability: record() resolves once Redis acknowledged the write. That survives a crash of
// Steward; it survives a crash of Redis only with an append-only file (appendonly yes,
// appendfsync everysec loses at most ~1 s of writes, always loses none). See docs/redis.md.
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Outcome, ScheduleRequest } from "../handler.js";
import type { DeliveryIntake, IncomingDelivery } from "../queue/types.js";
import type {
  ClaimedDelivery,
  ClaimedTask,
  DeliveryDecision,
  DeliveryFilter,
  DeliveryRecord,
  EngineStore,
  HandlerOutcomeRecord,
  StoredDelivery,
  StoredTask,
  TaskDecision,
} from "../queue/engine-types.js";
import type { AuditEntry, KeyValue, Store } from "./types.js";
import { connectRedis, describeRedisUrl, persistenceOf, warnAboutPersistence } from "./redis-connect.js";
import { defaultRedisPrefix, RedisKeys } from "./redis-keys.js";
import { RedisDeliveries } from "./redis-deliveries.js";
import { RedisBrowse } from "./redis-browse.js";
import type { ActivityRow, DeliveryBrowser, DeliveryPage, DeliveryQuery } from "./browse.js";
import { RedisTasks } from "./redis-tasks.js";
import { RedisLeases } from "./redis-leases.js";
import { defaultAuditCap, RedisKv } from "./redis-kv.js";

export interface RedisStoreOptions {
  /** Prefix of every key (default `{steward}:`, a hash tag). Replicas of one deployment share it. */
  prefix?: string;
  logger?: Logger;
  /** Approximate number of audit entries kept (default 100 000). */
  auditCap?: number;
}

export class RedisStore implements Store, DeliveryIntake, EngineStore, DeliveryBrowser {
  /** The server, without credentials (for logs and status output). */
  readonly where: string;
  readonly keys: RedisKeys;
  readonly #client: Redis;
  readonly #kv: RedisKv;
  readonly #deliveries: RedisDeliveries;
  readonly #tasks: RedisTasks;
  readonly #browse: RedisBrowse;
  readonly #leases: RedisLeases;
  #closed = false;

  constructor(client: Redis, where: string, opts: RedisStoreOptions = {}) {
    this.#client = client;
    this.where = where;
    this.keys = new RedisKeys(opts.prefix ?? defaultRedisPrefix);
    this.#kv = new RedisKv(client, this.keys, opts.auditCap ?? defaultAuditCap);
    this.#leases = new RedisLeases(client, this.keys);
    this.#deliveries = new RedisDeliveries(client, this.keys, this.#leases);
    this.#tasks = new RedisTasks(client, this.keys, this.#leases);
    this.#browse = new RedisBrowse(client, this.keys);
  }

  // Store (handler-facing)
  claim(key: string, opts?: { ttlMs?: number; value?: unknown }): Promise<boolean> { return this.#kv.claim(key, opts); }
  release(key: string): Promise<void> { return this.#kv.release(key); }
  get<T = unknown>(key: string): Promise<T | undefined> { return this.#kv.get<T>(key); }
  set(key: string, value: unknown, opts?: { ttlMs?: number }): Promise<void> { return this.#kv.set(key, value, opts); }
  delete(key: string): Promise<void> { return this.#kv.delete(key); }
  list<T = unknown>(prefix: string): Promise<KeyValue<T>[]> { return this.#kv.list<T>(prefix); }
  audit(entry: AuditEntry): Promise<void> { return this.#kv.audit(entry); }
  auditLog(filter?: { kind?: string; limit?: number }): Promise<Required<AuditEntry>[]> { return this.#kv.auditLog(filter); }

  // DeliveryIntake
  record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    return this.#deliveries.record(delivery);
  }
  async ready(): Promise<boolean> {
    if (this.#closed || this.#client.status !== "ready") return false;
    try {
      return (await this.#client.ping()) === "PONG";
    } catch {
      return false;
    }
  }
  depth(): Promise<number> { return this.#deliveries.depth(); }

  // DeliveryQueue
  claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined> { return this.#deliveries.claimDelivery(leaseMs); }
  recordOutcome(token: string, deliveryId: string, handler: string, outcome: Outcome, seconds: number): Promise<boolean> {
    return this.#deliveries.recordOutcome(token, deliveryId, handler, outcome, seconds);
  }
  finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean> {
    return this.#deliveries.finishDelivery(token, deliveryId, decision);
  }
  listDeliveries(filter?: DeliveryFilter): Promise<StoredDelivery[]> { return this.#deliveries.listDeliveries(filter); }
  getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    return this.#deliveries.getDelivery(id);
  }
  replayDelivery(id: string): Promise<boolean> { return this.#deliveries.replayDelivery(id); }
  // DeliveryBrowser (the console)
  browseDeliveries(query: DeliveryQuery): Promise<DeliveryPage> { return this.#browse.browseDeliveries(query); }
  deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> { return this.#browse.deliveryActivity(since, repositories); }
  countDead(repositories?: readonly string[]): Promise<number> { return this.#browse.countDead(repositories); }

  // TaskQueue
  scheduleTask(handler: string, request: ScheduleRequest): Promise<void> { return this.#tasks.scheduleTask(handler, request); }
  cancelTask(handler: string, key: string): Promise<void> { return this.#tasks.cancelTask(handler, key); }
  claimTask(leaseMs: number): Promise<ClaimedTask | undefined> { return this.#tasks.claimTask(leaseMs); }
  finishTask(claim: ClaimedTask, decision: TaskDecision): Promise<void> { return this.#tasks.finishTask(claim, decision); }
  listTasks(): Promise<StoredTask[]> { return this.#tasks.listTasks(); }

  // Leases and idleness
  renewLease(token: string, leaseMs: number): Promise<boolean> { return this.#leases.renewLease(token, leaseMs); }
  releaseLease(token: string): Promise<void> { return this.#leases.releaseLease(token); }
  pendingWork(now: Date): Promise<number> { return this.#leases.pendingWork(now); }
  nextDueAt(): Promise<Date | undefined> { return this.#leases.nextDueAt(); }
  recoverOrphans(): Promise<number> { return this.#leases.recoverOrphans(); }

  // Maintenance
  purgeExpired(): Promise<number> { return this.#kv.purgeExpired(); }
  purgeFinished(before: Date): Promise<number> { return this.#deliveries.purgeFinished(before.getTime()); }

  /** Waits for replies to commands already sent, then disconnects. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
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
  const client = await connectRedis(url, opts.logger, "steward-store");
  warnAboutPersistence(await persistenceOf(client), where, opts.logger);
  opts.logger?.debug({ redis: where, prefix: opts.prefix ?? defaultRedisPrefix }, "store opened");
  return new RedisStore(client, where, opts);
}
