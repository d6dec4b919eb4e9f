// Leases over both deliveries and tasks in Redis, found by token through one hash
// (token -> ref). Renewal, a graceful hand-back and the recovery of work whose owner died
// are one script with three modes, so all three check the same ownership rule.
import type { RedisClient } from "./connect.js";
import { leaseOwnerDead, newLeaseToken } from "../../lifecycle/process-owner.js";
import type { RedisKeys } from "./keys.js";
import { defineScript, pairs, type Script } from "./script.js";
import type { LeasesPart } from "../contract.js";

// KEYS: due, leased, leases, the due candidate's hash, the expired candidate's hash, then for a
// delivery each candidate's body and outcomes (due, then expired); a key not needed is the leases
// hash again. ARGV: order field, now, leaseUntil, token, ref prefix ('d:' or 't:'), due candidate,
// expired candidate ('' = none).
// The candidates were read just before (the earliest due item, the earliest running one whose
// lease expired): each is taken only if it still is what it was read as, the expired one first
// when it was due no later. 0: both are gone (another replica took them); the caller looks again.
// A delivery comes back with its body and outcomes, read in the same step rather than one more
// round trip (they change only under the lease just taken), and with how many more are due or
// expired now, so that a caller taking several does not look again at an empty queue.
const claimLua = `
local now = tonumber(ARGV[2])
local dueMember, expiredMember = ARGV[6], ARGV[7]
local dueScore
if dueMember ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], dueMember)
  if score and tonumber(score) <= now then dueScore = tonumber(score) else dueMember = '' end
end
if expiredMember ~= '' then
  local untilAt = redis.call('ZSCORE', KEYS[2], expiredMember)
  if not untilAt or tonumber(untilAt) > now then expiredMember = '' end
end
local member, from, key, body, outcomes
if expiredMember ~= '' then
  local order = tonumber(redis.call('HGET', KEYS[5], ARGV[1]) or '0')
  if dueMember == '' or order <= dueScore then member = expiredMember; from = KEYS[2]; key = KEYS[5]; body = KEYS[8]; outcomes = KEYS[9] end
end
if not member then
  if dueMember == '' then return 0 end
  member = dueMember; from = KEYS[1]; key = KEYS[4]; body = KEYS[6]; outcomes = KEYS[7]
end
redis.call('ZREM', from, member)
local old = redis.call('HGET', key, 'leaseToken')
if old then redis.call('HDEL', KEYS[3], old) end
redis.call('HSET', key, 'status', 'running', 'leaseToken', ARGV[4], 'leaseUntil', ARGV[3], 'updatedAt', ARGV[2])
if ARGV[5] == 'd:' then redis.call('HINCRBY', key, 'attempts', 1) end
redis.call('ZADD', KEYS[2], ARGV[3], member)
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5] .. member)
if ARGV[5] == 't:' then return { redis.call('HGETALL', key) } end
local more = redis.call('ZCOUNT', KEYS[1], '-inf', now) + redis.call('ZCOUNT', KEYS[2], '-inf', now)
return { redis.call('HGETALL', key), redis.call('GET', body), redis.call('HGETALL', outcomes), more }`;

// KEYS: leases, leased, due, tleased, tdue, the item's hash. ARGV: token, mode (renew|release|orphan),
// leaseUntil or now (a release: the due time), the item's ref (what the leases hash named for the token
// when it was read), and for release whether that time moves a task's run time too ('1').
const leaseLua = `
local ref = redis.call('HGET', KEYS[1], ARGV[1])
if ref ~= ARGV[4] then return 0 end
local key = KEYS[6]
local isDelivery = string.sub(ref, 1, 2) == 'd:'
local member = string.sub(ref, 3)
if redis.call('HGET', key, 'leaseToken') ~= ARGV[1] or redis.call('HGET', key, 'status') ~= 'running' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 0
end
local leased = isDelivery and KEYS[2] or KEYS[4]
if ARGV[2] == 'renew' then
  redis.call('HSET', key, 'leaseUntil', ARGV[3])
  redis.call('ZADD', leased, ARGV[3], member)
  return 1
end
redis.call('HDEL', key, 'leaseToken', 'leaseUntil')
redis.call('ZREM', leased, member)
redis.call('HDEL', KEYS[1], ARGV[1])
if isDelivery then
  redis.call('HSET', key, 'status', 'queued')
  if ARGV[2] == 'release' then
    -- attempts was counted at claim; an interrupted run does not use one up
    local attempts = tonumber(redis.call('HGET', key, 'attempts') or '0')
    redis.call('HSET', key, 'attempts', math.max(0, attempts - 1), 'nextRunAt', ARGV[3])
  end
  redis.call('ZADD', KEYS[3], redis.call('HGET', key, 'nextRunAt'), member)
else
  redis.call('HSET', key, 'status', 'pending')
  if ARGV[2] == 'release' and ARGV[5] == '1' then redis.call('HSET', key, 'runAt', ARGV[3]) end
  redis.call('ZADD', KEYS[5], redis.call('HGET', key, 'runAt'), member)
end
return 1`;

/** A claim that keeps losing its candidates to other replicas gives up after this many looks (the engine asks again). */
const MAX_CLAIM_LOOKS = 50;
/** After a lost race, a claim picks among this many of the earliest due items at most, so claimers spread out. */
const SPREAD = 16;

export interface Leased {
  token: string;
  /** The item's hash at the moment it was leased. */
  fields: Record<string, string>;
  /** A delivery's body (null when missing) and its outcomes' hash. */
  body?: string | null;
  outcomes?: Record<string, string>;
  /** For a delivery: whether others were due (or their leases expired) when it was leased. */
  more?: boolean;
}

export class RedisLeases implements LeasesPart {
  readonly #lease: Script;
  readonly #claim: Script;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.#lease = defineScript(client, "stewardLease", 6, leaseLua);
    this.#claim = defineScript(client, "stewardClaimWork", 9, claimLua);
  }

  /** Lease the next due delivery (counting an attempt) or task. */
  async claim(kind: "delivery" | "task", leaseMs: number): Promise<Leased | undefined> {
    const k = this.keys;
    const [due, leased] = kind === "delivery" ? [k.due, k.leased] : [k.taskDue, k.taskLeased];
    const [ref, order] = kind === "delivery" ? ["d:", "nextRunAt"] : ["t:", "runAt"];
    const item = (member: string) => (kind === "delivery" ? k.delivery(member) : k.task(member));
    for (let look = 0; look < MAX_CLAIM_LOOKS; look++) {
      const now = Date.now();
      // The first look takes the earliest; after a lost race, one of the earliest few at random.
      const among = Math.min(look + 1, SPREAD);
      const [dueHeads, expiredHeads] = await Promise.all([
        this.client.zrangebyscore(due, "-inf", now, "LIMIT", 0, among),
        this.client.zrangebyscore(leased, "-inf", now, "LIMIT", 0, 1),
      ]);
      if (dueHeads.length === 0 && expiredHeads.length === 0) return undefined;
      const dueMember = dueHeads[Math.floor(Math.random() * dueHeads.length)] ?? "";
      const expiredMember = expiredHeads[0] ?? "";
      const token = newLeaseToken();
      const other = (member: string, key: "body" | "outcomes") =>
        member && kind === "delivery" ? k[key](member) : k.leases;
      const reply = await this.#claim(
        [
          due,
          leased,
          k.leases,
          dueMember ? item(dueMember) : k.leases,
          expiredMember ? item(expiredMember) : k.leases,
          other(dueMember, "body"),
          other(dueMember, "outcomes"),
          other(expiredMember, "body"),
          other(expiredMember, "outcomes"),
        ],
        [order, now, now + leaseMs, token, ref, dueMember, expiredMember],
      );
      if (Array.isArray(reply)) {
        const [fields, body, outcomes, more] = reply as [unknown, string | null | undefined, unknown, number];
        if (kind === "task") return { token, fields: pairs(fields) };
        return { token, fields: pairs(fields), body: body ?? null, outcomes: pairs(outcomes), more: more > 0 };
      }
    }
    return undefined;
  }

  async #run(token: string, mode: "renew" | "release" | "orphan", at: number, movesTask = false): Promise<unknown> {
    const k = this.keys;
    const ref = await this.client.hget(k.leases, token);
    if (ref === null) return 0;
    return this.#lease(
      [k.leases, k.leased, k.due, k.taskLeased, k.taskDue, k.prefix + ref],
      [token, mode, at, ref, movesTask ? "1" : "0"],
    );
  }

  async renewLease(token: string, leaseMs: number): Promise<boolean> {
    return (await this.#run(token, "renew", Date.now() + leaseMs)) === 1;
  }

  async releaseLease(token: string, dueAt?: Date): Promise<void> {
    await this.#run(token, "release", dueAt?.getTime() ?? Date.now(), dueAt !== undefined);
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
