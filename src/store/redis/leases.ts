// Leases over both deliveries and tasks in Redis, found by token through one hash
// (token -> ref). Renewal, a graceful hand-back and the recovery of work whose owner died
// are one script with three modes, so all three check the same ownership rule.
import type { RedisClient } from "./connect.js";
import { leaseOwnerDead, newLeaseToken } from "../../lifecycle/process-owner.js";
import type { RedisKeys } from "./keys.js";
import { defineScript, pairs, type Script } from "./script.js";
import type { LeasesPart } from "../contract.js";

// KEYS: due, leased, leases. ARGV: prefix, ref prefix ('d:' or 't:'), order field, now, leaseUntil, token.
// The earliest due item, or a running one whose lease expired (its owner stopped renewing), by the order field.
const claimLua = `
local now = tonumber(ARGV[4])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1)
local member, from
if #expired > 0 then
  local order = tonumber(redis.call('HGET', ARGV[1] .. ARGV[2] .. expired[1], ARGV[3]) or '0')
  if #due == 0 or order <= tonumber(due[2]) then member = expired[1]; from = KEYS[2] end
end
if not member then
  if #due == 0 then return false end
  member = due[1]; from = KEYS[1]
end
local key = ARGV[1] .. ARGV[2] .. member
redis.call('ZREM', from, member)
local old = redis.call('HGET', key, 'leaseToken')
if old then redis.call('HDEL', KEYS[3], old) end
redis.call('HSET', key, 'status', 'running', 'leaseToken', ARGV[6], 'leaseUntil', ARGV[5], 'updatedAt', ARGV[4])
if ARGV[2] == 'd:' then redis.call('HINCRBY', key, 'attempts', 1) end
redis.call('ZADD', KEYS[2], ARGV[5], member)
redis.call('HSET', KEYS[3], ARGV[6], ARGV[2] .. member)
return redis.call('HGETALL', key)`;

// KEYS: leases, leased, due, tleased, tdue. ARGV: prefix, token, mode (renew|release|orphan), leaseUntil or now
const leaseLua = `
local ref = redis.call('HGET', KEYS[1], ARGV[2])
if not ref then return 0 end
local key = ARGV[1] .. ref
local isDelivery = string.sub(ref, 1, 2) == 'd:'
local member = string.sub(ref, 3)
if redis.call('HGET', key, 'leaseToken') ~= ARGV[2] or redis.call('HGET', key, 'status') ~= 'running' then
  redis.call('HDEL', KEYS[1], ARGV[2])
  return 0
end
local leased = isDelivery and KEYS[2] or KEYS[4]
if ARGV[3] == 'renew' then
  redis.call('HSET', key, 'leaseUntil', ARGV[4])
  redis.call('ZADD', leased, ARGV[4], member)
  return 1
end
redis.call('HDEL', key, 'leaseToken', 'leaseUntil')
redis.call('ZREM', leased, member)
redis.call('HDEL', KEYS[1], ARGV[2])
if isDelivery then
  redis.call('HSET', key, 'status', 'queued')
  if ARGV[3] == 'release' then
    -- attempts was counted at claim; an interrupted run does not use one up
    local attempts = tonumber(redis.call('HGET', key, 'attempts') or '0')
    redis.call('HSET', key, 'attempts', math.max(0, attempts - 1), 'nextRunAt', ARGV[4])
  end
  redis.call('ZADD', KEYS[3], redis.call('HGET', key, 'nextRunAt'), member)
else
  redis.call('HSET', key, 'status', 'pending')
  redis.call('ZADD', KEYS[5], redis.call('HGET', key, 'runAt'), member)
end
return 1`;

export interface Leased {
  token: string;
  /** The item's hash at the moment it was leased. */
  fields: Record<string, string>;
}

export class RedisLeases implements LeasesPart {
  readonly #lease: Script;
  readonly #claim: Script;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.#lease = defineScript(client, "stewardLease", 5, leaseLua);
    this.#claim = defineScript(client, "stewardClaimWork", 3, claimLua);
  }

  /** Lease the next due delivery (counting an attempt) or task. */
  async claim(kind: "delivery" | "task", leaseMs: number): Promise<Leased | undefined> {
    const k = this.keys;
    const now = Date.now();
    const token = newLeaseToken();
    const keys = kind === "delivery" ? [k.due, k.leased, k.leases] : [k.taskDue, k.taskLeased, k.leases];
    const [ref, order] = kind === "delivery" ? ["d:", "nextRunAt"] : ["t:", "runAt"];
    const reply = await this.#claim(keys, [k.prefix, ref, order, now, now + leaseMs, token]);
    return reply ? { token, fields: pairs(reply) } : undefined;
  }

  #run(token: string, mode: "renew" | "release" | "orphan", at: number): Promise<unknown> {
    const k = this.keys;
    return this.#lease([k.leases, k.leased, k.due, k.taskLeased, k.taskDue], [k.prefix, token, mode, at]);
  }

  async renewLease(token: string, leaseMs: number): Promise<boolean> {
    return (await this.#run(token, "renew", Date.now() + leaseMs)) === 1;
  }

  async releaseLease(token: string): Promise<void> {
    await this.#run(token, "release", Date.now());
  }

  /**
   * Work leased by a process on this host that no longer exists goes back at once; work of
   * a replica on another host comes back when its lease expires (claim takes expired leases).
   */
  async recoverOrphans(): Promise<number> {
    const tokens = await this.client.hkeys(this.keys.leases);
    let recovered = 0;
    for (const token of tokens) {
      if (leaseOwnerDead(token) && (await this.#run(token, "orphan", Date.now())) === 1) recovered++;
    }
    return recovered;
  }

  /** Deliveries queued, awaiting a retry or running, plus tasks running or due by `now`. */
  async pendingWork(now: Date): Promise<number> {
    const k = this.keys;
    const [due, leased, taskLeased, taskDue] = await Promise.all([
      this.client.zcard(k.due),
      this.client.zcard(k.leased),
      this.client.zcard(k.taskLeased),
      this.client.zcount(k.taskDue, "-inf", now.getTime()),
    ]);
    return due + leased + taskLeased + taskDue;
  }

  async nextDueAt(): Promise<Date | undefined> {
    const k = this.keys;
    const heads = await Promise.all(
      [k.due, k.leased, k.taskDue, k.taskLeased].map((set) => this.client.zrange(set, 0, 0, "WITHSCORES")),
    );
    const times = heads.filter((h) => h.length === 2).map((h) => Number(h[1]));
    return times.length ? new Date(Math.min(...times)) : undefined;
  }
}
