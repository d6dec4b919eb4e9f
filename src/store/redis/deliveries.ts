// Deliveries in Redis: the intake (SET NX on the body is the dedup) and the leased queue
// with per-handler outcomes. Each state change is one Lua script, so two replicas never
// lease the same delivery and a run whose lease was taken back writes nothing.
import type { RedisClient } from "./connect.js";
import type {
  AttemptRecord,
  ClaimedDelivery,
  DeliveryDecision,
  DeliveryFilter,
  DeliveryRecord,
  DeliveryStatus,
  HandlerOutcomeRecord,
  IncomingDelivery,
  Outcome,
  StoredDelivery,
} from "../records.js";
import type { RedisKeys } from "./keys.js";
import type { RedisLeases } from "./leases.js";
import {
  defineScript,
  defineVariadicScript,
  optional,
  optionalNumber,
  pairs,
  pipelined,
  type Script,
} from "./script.js";
import type { DeliveriesPart } from "../contract.js";
import { keptHeaders, outcomeRecord } from "../recorded.js";

// KEYS: body, state, due, all, by repository, by event, done.
// ARGV: payload text, id, event, action, installation, repository, receivedAt, now,
// settled ('1': no handler takes it, recorded done; '': queued), headers json
const recordLua = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('HSET', KEYS[2], 'id', ARGV[2], 'event', ARGV[3], 'action', ARGV[4], 'inst', ARGV[5], 'repo', ARGV[6],
  'receivedAt', ARGV[7], 'status', 'queued', 'attempts', 0, 'nextRunAt', ARGV[8], 'updatedAt', ARGV[8], 'headers', ARGV[10])
if ARGV[9] == '1' then
  redis.call('HSET', KEYS[2], 'status', 'done')
  redis.call('ZADD', KEYS[7], ARGV[8], ARGV[2])
else
  redis.call('ZADD', KEYS[3], ARGV[8], ARGV[2])
end
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[2])
if ARGV[6] ~= '' then redis.call('ZADD', KEYS[5], ARGV[7], ARGV[2]) end
redis.call('ZADD', KEYS[6], ARGV[7], ARGV[2])
return 1`;

// KEYS: state, outcomes, attempts, failed (any handler), failed of this handler. ARGV: token, handler, record json (without attempts), attempts kept, id
const outcomeLua = `
if redis.call('HGET', KEYS[1], 'status') ~= 'running' or redis.call('HGET', KEYS[1], 'leaseToken') ~= ARGV[1] then return 0 end
local record = cjson.decode(ARGV[3])
local previous = redis.call('HGET', KEYS[2], ARGV[2])
record.attempts = 1
if previous then record.attempts = (cjson.decode(previous).attempts or 0) + 1 end
redis.call('HSET', KEYS[2], ARGV[2], cjson.encode(record))
local run = { handler = ARGV[2], attempt = record.attempts, status = record.status, detail = record.detail, at = record.updatedAt }
redis.call('RPUSH', KEYS[3], cjson.encode(run))
redis.call('LTRIM', KEYS[3], -tonumber(ARGV[4]), -1)
-- the console's failed-outcome index: only failures (few) are added; a handler that failed and now did not leaves it
if record.status == 'failed' then
  local at = redis.call('HGET', KEYS[1], 'receivedAt')
  redis.call('ZADD', KEYS[5], at, ARGV[5])
  redis.call('ZADD', KEYS[4], at, ARGV[5])
elseif previous and string.find(previous, '"status":"failed"', 1, true) then
  redis.call('ZREM', KEYS[5], ARGV[5])
  local still = false
  for _, o in ipairs(redis.call('HVALS', KEYS[2])) do
    if string.find(o, '"status":"failed"', 1, true) then still = true break end
  end
  if not still then redis.call('ZREM', KEYS[4], ARGV[5]) end
end
return 1`;

// KEYS: state, due, leased, leases, done, dead. ARGV: token, id, status, nextRunAt, hasError, lastError, now
const finishLua = `
if redis.call('HGET', KEYS[1], 'leaseToken') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'nextRunAt', ARGV[4], 'updatedAt', ARGV[7])
redis.call('HDEL', KEYS[1], 'leaseToken', 'leaseUntil')
if ARGV[5] == '1' then redis.call('HSET', KEYS[1], 'lastError', ARGV[6]) else redis.call('HDEL', KEYS[1], 'lastError') end
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('HDEL', KEYS[4], ARGV[1])
if ARGV[3] == 'failed' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
elseif ARGV[3] == 'done' then redis.call('ZADD', KEYS[5], ARGV[7], ARGV[2]) end
if ARGV[3] == 'dead' then redis.call('ZADD', KEYS[6], redis.call('HGET', KEYS[1], 'receivedAt'), ARGV[2]) else redis.call('ZREM', KEYS[6], ARGV[2]) end
return 1`;

// KEYS: state, outcomes, due, done, dead, failed (any handler), then the failed zset of each
// handler with an outcome (as read just before). ARGV: id, now, those handlers' names.
// -1: the handlers with an outcome are no longer those (it ran meanwhile); the caller reads them again.
const replayLua = `
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'running' then return 0 end
local present = redis.call('HKEYS', KEYS[2])
if #present ~= #ARGV - 2 then return -1 end
local named = {}
for i = 3, #ARGV do named[ARGV[i]] = true end
for _, h in ipairs(present) do if not named[h] then return -1 end end
for i = 7, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HSET', KEYS[1], 'status', 'queued', 'attempts', 0, 'nextRunAt', ARGV[2], 'updatedAt', ARGV[2])
redis.call('HDEL', KEYS[1], 'lastError')
redis.call('DEL', KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
return 1`;

// One finished delivery out, with its indexes. KEYS: done, all, state, body, outcomes, attempts,
// failed (any handler), its repository's zset, its event's zset, then the failed zset of each
// handler with an outcome. ARGV: id, before (exclusive), repository, event, those handlers' names.
// What the caller read (repository, event, handlers) is checked: 0 when the delivery is no longer
// finished before `before` or changed meanwhile (it is looked at again in the next batch).
const purgeLua = `
local finished = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not finished or tonumber(finished) >= tonumber(ARGV[2]) then return 0 end
local where = redis.call('HMGET', KEYS[3], 'repo', 'event')
if (where[1] or '') ~= ARGV[3] or (where[2] or '') ~= ARGV[4] then return 0 end
local present = redis.call('HKEYS', KEYS[5])
if #present ~= #ARGV - 4 then return 0 end
local named = {}
for i = 5, #ARGV do named[ARGV[i]] = true end
for _, h in ipairs(present) do if not named[h] then return 0 end end
if ARGV[3] ~= '' then redis.call('ZREM', KEYS[8], ARGV[1]) end
redis.call('ZREM', KEYS[9], ARGV[1])
for i = 10, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1`;

/** Handler runs kept per delivery for `deliveries show` (a delivery retried forever stays bounded). */
const MAX_ATTEMPTS_KEPT = 200;

function toDelivery(state: Record<string, string>, payload: string | null): StoredDelivery {
  return {
    id: state.id!,
    event: state.event!,
    action: optional(state.action),
    installationId: optionalNumber(state.inst),
    repository: optional(state.repo),
    headers: JSON.parse(state.headers ?? "{}") as Record<string, string>,
    payload: payload ?? "",
    receivedAt: new Date(Number(state.receivedAt)),
    status: state.status as DeliveryStatus,
    attempts: Number(state.attempts),
    nextRunAt: new Date(Number(state.nextRunAt)),
    lastError: state.lastError,
    updatedAt: new Date(Number(state.updatedAt)),
  };
}

interface OutcomeJson {
  status: Outcome["status"];
  detail?: string;
  retryable: boolean;
  attempts: number;
  seconds: number;
  updatedAt: number;
}

export function toOutcomes(flat: Record<string, string>): HandlerOutcomeRecord[] {
  return Object.entries(flat)
    .map(([handler, json]) => {
      const o = JSON.parse(json) as OutcomeJson;
      return {
        handler,
        status: o.status,
        detail: o.detail,
        retryable: o.retryable,
        attempts: o.attempts,
        seconds: o.seconds,
        updatedAt: new Date(o.updatedAt),
      };
    })
    .sort((a, b) => (a.handler < b.handler ? -1 : a.handler > b.handler ? 1 : 0));
}

/**
 * Whether Redis holds deliveries of the earlier layout, which kept a delivery's headers and
 * payload as one JSON body (this one keeps the payload's text as received and the headers in
 * the delivery's hash): the oldest delivery kept has no headers field.
 */
export async function holdsEarlierLayout(client: RedisClient, keys: RedisKeys): Promise<boolean> {
  const [oldest] = await client.zrange(keys.all, 0, 0);
  return oldest !== undefined && (await client.hexists(keys.delivery(oldest), "headers")) === 0;
}

const listPage = 200;
/** Finished deliveries purged per batch: other work runs between batches. */
const PURGE_BATCH = 500;

export class RedisDeliveries implements DeliveriesPart {
  #closed = false;
  readonly #record: Script;
  readonly #outcome: Script;
  readonly #finish: Script;
  readonly #replay: Script;
  readonly #purge: Script;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly leases: RedisLeases,
  ) {
    this.#record = defineScript(client, "stewardRecord", 7, recordLua);
    this.#outcome = defineScript(client, "stewardRecordOutcome", 5, outcomeLua);
    this.#finish = defineScript(client, "stewardFinishDelivery", 6, finishLua);
    this.#replay = defineVariadicScript(client, "stewardReplay", replayLua);
    this.#purge = defineVariadicScript(client, "stewardPurgeFinished", purgeLua);
  }

  /** Resolves once Redis acknowledged the write (durable as far as Redis' own persistence goes). */
  async record(d: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    if (this.#closed) throw new Error("store is closed");
    const k = this.keys;
    const now = Date.now();
    const result = await this.#record(
      [k.body(d.id), k.delivery(d.id), k.due, k.all, k.byRepository(d.repository ?? ""), k.byEvent(d.event), k.done],
      [
        d.payload,
        d.id,
        d.event,
        d.action ?? "",
        d.installationId ?? "",
        d.repository ?? "",
        d.receivedAt.getTime(),
        now,
        d.settled ? "1" : "",
        JSON.stringify(keptHeaders(d.headers)),
      ],
    );
    return result === 1 ? "recorded" : "duplicate";
  }

  /** Records refused from here on (the client is closing). */
  markClosed(): void {
    this.#closed = true;
  }

  async depth(): Promise<number> {
    const [due, leased] = await Promise.all([this.client.zcard(this.keys.due), this.client.zcard(this.keys.leased)]);
    return due + leased;
  }

  async oldestDueAt(): Promise<Date | undefined> {
    // The due set holds queued and failed deliveries scored by their next run.
    const head = await this.client.zrange(this.keys.due, 0, 0, "WITHSCORES");
    return head.length === 2 ? new Date(Number(head[1])) : undefined;
  }

  async claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined> {
    return (await this.#claim(leaseMs))?.claim;
  }

  /**
   * One lease script per delivery: each takes the earliest due one, as a single claim does. It
   * stops when the last one said none other was due (a delivery recorded after it wakes the pool).
   */
  async claimDeliveries(leaseMs: number, max: number): Promise<ClaimedDelivery[]> {
    const claims: ClaimedDelivery[] = [];
    while (claims.length < max) {
      const claimed = await this.#claim(leaseMs);
      if (!claimed) break;
      claims.push(claimed.claim);
      if (!claimed.more) break;
    }
    return claims;
  }

  async #claim(leaseMs: number): Promise<{ claim: ClaimedDelivery; more: boolean } | undefined> {
    const leased = await this.leases.claim("delivery", leaseMs);
    if (!leased) return undefined;
    const claim = {
      token: leased.token,
      delivery: toDelivery(leased.fields, leased.body ?? null),
      outcomes: toOutcomes(leased.outcomes ?? {}),
    };
    return { claim, more: leased.more === true };
  }

  async recordOutcome(
    token: string,
    deliveryId: string,
    handler: string,
    outcome: Outcome,
    seconds: number,
  ): Promise<boolean> {
    const { status, detail, retryable } = outcomeRecord(outcome);
    const record: Omit<OutcomeJson, "attempts"> = { status, retryable, seconds, updatedAt: Date.now() };
    if (detail !== undefined) record.detail = detail;
    const k = this.keys;
    return (
      (await this.#outcome(
        [k.delivery(deliveryId), k.outcomes(deliveryId), k.attempts(deliveryId), k.failed, k.failedBy(handler)],
        [token, handler, JSON.stringify(record), MAX_ATTEMPTS_KEPT, deliveryId],
      )) === 1
    );
  }

  async finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean> {
    const now = Date.now();
    const nextRunAt = decision.status === "failed" ? decision.retryAt.getTime() : now;
    const lastError = decision.status === "done" ? undefined : decision.lastError;
    const k = this.keys;
    const result = await this.#finish(
      [k.delivery(deliveryId), k.due, k.leased, k.leases, k.done, k.dead],
      [token, deliveryId, decision.status, nextRunAt, lastError === undefined ? "0" : "1", lastError ?? "", now],
    );
    return result === 1;
  }

  async getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    const [state, body, outcomes, runs] = await Promise.all([
      this.client.hgetall(this.keys.delivery(id)),
      this.client.get(this.keys.body(id)),
      this.client.hgetall(this.keys.outcomes(id)),
      this.client.lrange(this.keys.attempts(id), 0, -1),
    ]);
    if (state.id === undefined) return undefined;
    const attempts = runs.map((json) => {
      const r = JSON.parse(json) as {
        handler: string;
        attempt: number;
        status: AttemptRecord["status"];
        detail?: string;
        at: number;
      };
      return { handler: r.handler, attempt: r.attempt, status: r.status, detail: r.detail, at: new Date(r.at) };
    });
    return { delivery: toDelivery(state, body), outcomes: toOutcomes(outcomes), attempts };
  }

  /** Newest first, filtered, reading the receipt index a page at a time. */
  async listDeliveries(filter: DeliveryFilter = {}): Promise<StoredDelivery[]> {
    const limit = filter.limit ?? 100;
    const found: StoredDelivery[] = [];
    for (let start = 0; found.length < limit; start += listPage) {
      const ids = await this.client.zrevrange(this.keys.all, start, start + listPage - 1);
      if (ids.length === 0) break;
      const states = await pipelined<Record<string, string>>(this.client, (p) =>
        ids.forEach((id) => p.hgetall(this.keys.delivery(id))),
      );
      const wanted = ids.filter((_, i) => {
        const s = states[i]!;
        return (
          s.id !== undefined &&
          (!filter.status || s.status === filter.status) &&
          (!filter.event || s.event === filter.event) &&
          (!filter.since || Number(s.receivedAt) >= filter.since.getTime())
        );
      });
      const bodies = wanted.length ? await this.client.mget(wanted.map((id) => this.keys.body(id))) : [];
      wanted.forEach((id, i) => {
        if (found.length < limit) found.push(toDelivery(states[ids.indexOf(id)]!, bodies[i] ?? null));
      });
      if (ids.length < listPage) break;
    }
    return found;
  }

  async replayDelivery(id: string): Promise<boolean> {
    const k = this.keys;
    for (;;) {
      const handlers = await this.client.hkeys(k.outcomes(id));
      const result = await this.#replay(
        [k.delivery(id), k.outcomes(id), k.due, k.done, k.dead, k.failed, ...handlers.map((h) => k.failedBy(h))],
        [id, Date.now(), ...handlers],
      );
      // -1: it ran between the read and the replay; its handlers are read again.
      if (result !== -1) return result === 1;
    }
  }

  async purgeFinished(beforeDate: Date): Promise<number> {
    const before = beforeDate.getTime();
    const k = this.keys;
    let total = 0;
    for (;;) {
      const ids = await this.client.zrangebyscore(k.done, "-inf", `(${before}`, "LIMIT", 0, PURGE_BATCH);
      if (ids.length === 0) return total;
      // What each delivery's indexes are (its repository, event, handlers), read in one pipeline, then one script each.
      const read = await pipelined<unknown>(this.client, (p) => {
        for (const id of ids) p.hmget(k.delivery(id), "repo", "event").hkeys(k.outcomes(id));
      });
      const purged = await Promise.all(
        ids.map((id, i) => {
          const [repo, event] = (read[2 * i] as (string | null)[]).map((v) => v ?? "");
          const handlers = read[2 * i + 1] as string[];
          return this.#purge(
            [
              k.done,
              k.all,
              k.delivery(id),
              k.body(id),
              k.outcomes(id),
              k.attempts(id),
              k.failed,
              k.byRepository(repo!),
              k.byEvent(event!),
              ...handlers.map((h) => k.failedBy(h)),
            ],
            [id, before, repo!, event!, ...handlers],
          );
        }),
      );
      total += purged.filter((r) => r === 1).length;
      if (ids.length < PURGE_BATCH) return total;
    }
  }
}
