// Scheduled tasks in Redis: one hash per (handler, key), a due zset by run time and a
// leased zset by lease expiry. A task re-scheduled during its own run becomes a new
// generation, so finishing the old run leaves it alone (periodic work re-schedules itself).
import type { RedisClient } from "./connect.js";
import type { ClaimedTask, ScheduleRequest, StoredTask, TaskDecision, TaskStatus } from "../records.js";
import type { RedisKeys } from "./keys.js";
import type { RedisLeases } from "./leases.js";
import { defineScript, optional, optionalNumber, pairs, pipelined, type Script } from "./script.js";
import type { TasksPart } from "../contract.js";

// KEYS: task, tdue, tleased, tasks, leases. ARGV: member, handler, key, runAt, data, installation, replace, now
const scheduleLua = `
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'pending' and ARGV[7] ~= '1' then return 0 end
if status then
  -- a running or dead row is spent: the new request is the next generation
  local old = redis.call('HGET', KEYS[1], 'leaseToken')
  if old then redis.call('HDEL', KEYS[5], old) end
  redis.call('HDEL', KEYS[1], 'leaseToken', 'leaseUntil', 'lastError')
  redis.call('HINCRBY', KEYS[1], 'generation', 1)
  redis.call('ZREM', KEYS[3], ARGV[1])
else
  redis.call('HSET', KEYS[1], 'generation', 1)
end
redis.call('HSET', KEYS[1], 'handler', ARGV[2], 'key', ARGV[3], 'runAt', ARGV[4], 'data', ARGV[5], 'inst', ARGV[6],
  'status', 'pending', 'attempts', 0, 'updatedAt', ARGV[8])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
return 1`;

// KEYS: task, tdue, tleased, tasks, leases. ARGV: member
const cancelLua = `
local old = redis.call('HGET', KEYS[1], 'leaseToken')
if old then redis.call('HDEL', KEYS[5], old) end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1`;

// KEYS: task, tdue, tleased, tasks, leases. ARGV: member, token, generation, status, retryAt, lastError, now
const finishLua = `
if redis.call('HGET', KEYS[1], 'leaseToken') ~= ARGV[2] or redis.call('HGET', KEYS[1], 'generation') ~= ARGV[3] then return 0 end
redis.call('HDEL', KEYS[5], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[1])
if ARGV[4] == 'done' then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
  return 1
end
redis.call('HDEL', KEYS[1], 'leaseToken', 'leaseUntil')
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'lastError', ARGV[6], 'updatedAt', ARGV[7])
if ARGV[4] == 'retry' then
  redis.call('HSET', KEYS[1], 'status', 'pending', 'runAt', ARGV[5])
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
  redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
else
  redis.call('HSET', KEYS[1], 'status', 'dead')
end
return 1`;

function toTask(h: Record<string, string>): StoredTask {
  return {
    handler: h.handler!,
    key: h.key!,
    runAt: new Date(Number(h.runAt)),
    data: JSON.parse(h.data ?? "null") as unknown,
    installationId: optionalNumber(h.inst),
    status: h.status as TaskStatus,
    attempts: Number(h.attempts ?? 0),
    lastError: optional(h.lastError),
  };
}

export class RedisTasks implements TasksPart {
  readonly #schedule: Script;
  readonly #cancel: Script;
  readonly #finish: Script;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly leases: RedisLeases,
  ) {
    this.#schedule = defineScript(client, "stewardScheduleTask", 5, scheduleLua);
    this.#cancel = defineScript(client, "stewardCancelTask", 5, cancelLua);
    this.#finish = defineScript(client, "stewardFinishTask", 5, finishLua);
  }

  #taskKeys(member: string): string[] {
    const k = this.keys;
    return [k.task(member), k.taskDue, k.taskLeased, k.tasks, k.leases];
  }

  async scheduleTask(handler: string, r: ScheduleRequest): Promise<void> {
    const member = this.keys.taskMember(handler, r.key);
    const data = JSON.stringify(r.data === undefined ? null : r.data);
    await this.#schedule(this.#taskKeys(member), [
      member,
      handler,
      r.key,
      r.runAt.getTime(),
      data,
      r.installationId ?? "",
      r.replace ? "1" : "0",
      Date.now(),
    ]);
  }

  async cancelTask(handler: string, key: string): Promise<void> {
    const member = this.keys.taskMember(handler, key);
    await this.#cancel(this.#taskKeys(member), [member]);
  }

  async claimTask(leaseMs: number): Promise<ClaimedTask | undefined> {
    const leased = await this.leases.claim("task", leaseMs);
    return leased && { token: leased.token, generation: Number(leased.fields.generation), task: toTask(leased.fields) };
  }

  async finishTask(claim: ClaimedTask, decision: TaskDecision): Promise<void> {
    const member = this.keys.taskMember(claim.task.handler, claim.task.key);
    const retryAt = decision.status === "retry" ? decision.retryAt.getTime() : 0;
    const lastError = decision.status === "done" ? "" : decision.lastError;
    await this.#finish(this.#taskKeys(member), [
      member,
      claim.token,
      claim.generation,
      decision.status,
      retryAt,
      lastError,
      Date.now(),
    ]);
  }

  async listTasks(): Promise<StoredTask[]> {
    const members = await this.client.zrange(this.keys.tasks, 0, -1);
    const rows = await pipelined<Record<string, string>>(this.client, (p) =>
      members.forEach((m) => p.hgetall(this.keys.task(m))),
    );
    return rows.filter((h) => h.handler !== undefined).map(toTask);
  }
}
