// The console's reads of the Redis store: newest first from the receipt-time zsets (every
// delivery, per repository, per event, dead letters), merged when the reader may see several
// repositories, then filtered on the delivery hashes read in one pipeline per batch. Outcome
// filters and the overview's counts run inside Redis (Lua): one round trip per batch of
// candidates, not one per delivery.
import type { RedisClient } from "./connect.js";
import type { DeliveryStatus } from "../records.js";
import { defineVariadicScript, optional, optionalNumber, pipelined, type Script } from "./script.js";
import type { RedisKeys } from "./keys.js";
import { pageLimit, type ActivityRow, type DeliveryPage, type DeliveryQuery, type DeliverySummary } from "../browse.js";
import { decisionLine, MAX_PAGE, type DecisionLine } from "../browse.js";
import { toOutcomes } from "./deliveries.js";
import type { BrowsePart } from "../contract.js";

const BATCH = 200;
/** Deliveries read for one page at most: a rare filter answers a short page with a cursor, not a scan of everything. */
const MAX_SCAN = 20_000;
/** Time spent scanning for one page at most (after the first batch), for the same reason. */
const SCAN_BUDGET_MS = 100;
/** Above this many readable repositories, read every delivery and filter rather than merging one zset per repository. */
const MAX_MERGED = 64;
/** Queued and retrying deliveries read whole for a page at most; a longer backlog is walked as any other filter. */
const MAX_QUEUE_READ = 20_000;
/** The overview counts at most this many recent deliveries. */
const MAX_ACTIVITY = 20_000;

// Every key a script reads is declared in KEYS (Redis Cluster requires it, even within one slot),
// so the candidates' ids are read from their index first and the script gets their keys.

// Per-minute counts of the given deliveries, by status, counted inside Redis: one round trip
// per chunk instead of one HMGET per delivery over the network.
// KEYS: delivery hashes. ARGV: scoped ('1': only the repositories from ARGV[2] on).
// Returns [minute:status, count, ...].
const activityLua = `
local allowed = nil
if ARGV[1] == '1' then
  allowed = {}
  for i = 2, #ARGV do allowed[ARGV[i]] = true end
end
local counts = {}
for _, key in ipairs(KEYS) do
  local f = redis.call('HMGET', key, 'receivedAt', 'status', 'repo')
  if f[1] and f[2] and (not allowed or allowed[f[3] or '']) then
    local minute = string.format('%.0f', math.floor(tonumber(f[1]) / 60000) * 60000) .. ':' .. f[2]
    counts[minute] = (counts[minute] or 0) + 1
  end
end
local out = {}
for k, v in pairs(counts) do
  out[#out + 1] = k
  out[#out + 1] = v
end
return out`;

// Whether each candidate has a matching handler outcome (and, when asked, event, status and
// repository), checked inside Redis: one round trip per batch of candidates.
// KEYS: the candidates' outcome hashes, then their delivery hashes (same order). ARGV: handler
// ('' = any), outcome ('' = any), event ('' = any), status ('' = any), scoped ('1': only the
// repositories from ARGV[7] on), repository ('' = any).
// Returns one 1 or 0 per candidate.
const outcomeMatchLua = `
local n = #KEYS / 2
local handler, event, status, repository = ARGV[1], ARGV[3], ARGV[4], ARGV[6]
local pat = nil
if ARGV[2] ~= '' then pat = '"status":"' .. ARGV[2] .. '"' end
local allowed = nil
if ARGV[5] == '1' then
  allowed = {}
  for i = 7, #ARGV do allowed[ARGV[i]] = true end
end
local out = {}
for i = 1, n do
  local ok = false
  if handler ~= '' then
    local o = redis.call('HGET', KEYS[i], handler)
    ok = o and (not pat or string.find(o, pat, 1, true)) and true or false
  else
    for _, o in ipairs(redis.call('HVALS', KEYS[i])) do
      if not pat or string.find(o, pat, 1, true) then ok = true break end
    end
  end
  if ok and (event ~= '' or status ~= '' or allowed or repository ~= '') then
    local f = redis.call('HMGET', KEYS[n + i], 'event', 'status', 'repo')
    ok = (event == '' or f[1] == event) and (status == '' or f[2] == status)
      and (repository == '' or f[3] == repository) and (not allowed or allowed[f[3] or '']) and true or false
  end
  out[i] = ok and 1 or 0
end
return out`;

// Which of the given deliveries (the due zset's: queued and retrying) match a status, event,
// repository and the reader's repositories, checked inside Redis: one round trip, not one
// command per waiting delivery. KEYS: delivery hashes. ARGV: status, event ('' = any),
// repository ('' = any), scoped ('1': only the repositories from ARGV[5] on).
// Returns [index (1-based) in KEYS, receivedAt, ...] of the matches.
const queueMatchLua = `
local status, event, repository = ARGV[1], ARGV[2], ARGV[3]
local allowed = nil
if ARGV[4] == '1' then
  allowed = {}
  for i = 5, #ARGV do allowed[ARGV[i]] = true end
end
local out = {}
for i, key in ipairs(KEYS) do
  local f = redis.call('HMGET', key, 'receivedAt', 'status', 'event', 'repo')
  if f[1] and f[2] == status and (event == '' or f[3] == event) and (repository == '' or f[4] == repository)
    and (not allowed or allowed[f[4] or '']) then
    out[#out + 1] = i
    out[#out + 1] = f[1]
  end
end
return out`;

/** Candidates read from an index and checked in one script call (outcome filters). */
const OUTCOME_BATCH = 500;
/** Deliveries counted in one script call (the overview). */
const ACTIVITY_CHUNK = 2_000;

/** Candidates one outcome-filtered page reads in Redis at most (some 10-50 ms of Redis time), outside the failed zsets. */
const MAX_OUTCOME_SCAN = 10_000;

interface Position {
  score: number;
  id: string;
}

interface Entry extends Position {
  key: string;
}

function before(a: Position, b: Position): boolean {
  return a.score < b.score || (a.score === b.score && a.id < b.id);
}

function parseCursor(cursor: string | undefined): Position | undefined {
  const m = cursor ? /^(\d+):(.+)$/s.exec(cursor) : null;
  return m ? { score: Number(m[1]), id: m[2]! } : undefined;
}

function summaryOf(s: Record<string, string>): DeliverySummary {
  return {
    id: s.id!,
    event: s.event!,
    action: optional(s.action),
    repository: optional(s.repo),
    installationId: optionalNumber(s.inst),
    status: s.status as DeliveryStatus,
    attempts: Number(s.attempts),
    receivedAt: new Date(Number(s.receivedAt)),
    updatedAt: new Date(Number(s.updatedAt)),
    lastError: s.lastError,
  };
}

export class RedisBrowse implements BrowsePart {
  readonly #activity: Script;
  readonly #outcomeMatch: Script;
  readonly #queueMatch: Script;
  #indexedFrom: number | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.#activity = defineVariadicScript(client, "stewardBrowseActivity", activityLua);
    this.#outcomeMatch = defineVariadicScript(client, "stewardBrowseOutcomes", outcomeMatchLua);
    this.#queueMatch = defineVariadicScript(client, "stewardBrowseQueue", queueMatchLua);
  }

  /** Up to `size` members of `key` strictly older than `upper`, newest first; `full` when more may follow. */
  async #below(key: string, upper: Position | undefined, size: number): Promise<{ entries: Entry[]; full: boolean }> {
    for (let offset = 0; ; offset += size) {
      const max = upper ? String(upper.score) : "+inf";
      const flat = await this.client.zrevrangebyscore(key, max, "-inf", "WITHSCORES", "LIMIT", offset, size);
      const entries: Entry[] = [];
      for (let i = 0; i < flat.length; i += 2) {
        const e = { key, id: flat[i]!, score: Number(flat[i + 1]) };
        if (!upper || before(e, upper)) entries.push(e);
      }
      const full = flat.length === size * 2;
      // A whole batch of ties at the cursor's own time: look further along the same score.
      if (entries.length > 0 || !full) return { entries, full };
    }
  }

  #sources(q: DeliveryQuery): { keys: string[]; allowed: Set<string> | undefined } {
    const k = this.keys;
    const allowed = q.repositories ? new Set(q.repositories) : undefined;
    if (q.repository !== undefined)
      return { keys: !allowed || allowed.has(q.repository) ? [k.byRepository(q.repository)] : [], allowed };
    if (q.status === "dead") return { keys: [k.dead], allowed };
    // An event index is filtered by the readable repositories in memory: usually fewer reads than merging one zset per repository.
    if (q.event !== undefined) return { keys: [k.byEvent(q.event)], allowed };
    if (allowed && allowed.size <= MAX_MERGED) return { keys: [...allowed].map((r) => k.byRepository(r)), allowed };
    return { keys: [k.all], allowed };
  }

  async browseDeliveries(q: DeliveryQuery): Promise<DeliveryPage> {
    const limit = pageLimit(q.limit);
    if (q.handler !== undefined || q.outcome !== undefined) return this.#byOutcome(q, limit);
    if (q.status === "queued" || q.status === "failed") {
      const page = await this.#fromQueue(q, limit);
      if (page) return page;
    }
    const { keys, allowed } = this.#sources(q);
    let upper = parseCursor(q.cursor);
    if (q.until !== undefined && (!upper || upper.score >= q.until)) upper = { score: q.until, id: "" };
    const found: DeliverySummary[] = [];
    let scanned = 0;
    let last: Position | undefined;
    let exhausted = keys.length === 0;
    const deadline = Date.now() + SCAN_BUDGET_MS;
    while (!exhausted && found.length < limit && scanned < MAX_SCAN && (scanned === 0 || Date.now() < deadline)) {
      // About what the page still needs from each source: a one-row page of 15 repositories reads 15 x 11, not 15 x 200.
      const size = Math.min(BATCH, limit - found.length + 10);
      const batches = await Promise.all(keys.map((key) => this.#below(key, upper, size)));
      // Merged entries are complete down to the oldest entry the truncated sources returned.
      let floor: Position | undefined;
      for (const b of batches) {
        const tail = b.entries[b.entries.length - 1];
        if (b.full && tail && (!floor || before(floor, tail))) floor = tail;
      }
      const merged = batches
        .flatMap((b) => b.entries)
        .filter((e) => !floor || !before(e, floor))
        .sort((a, b) => (before(a, b) ? 1 : before(b, a) ? -1 : 0));
      exhausted = floor === undefined;
      const ranged = q.since === undefined ? merged : merged.filter((e) => e.score >= q.since!);
      if (ranged.length < merged.length) exhausted = true;
      // Read the states of about what the page still needs, not of every merged candidate (four
      // repositories' batches are 800): the rest is read again from the zsets if needed.
      const inRange = ranged.slice(0, 2 * (limit - found.length) + 10);
      if (inRange.length < ranged.length) exhausted = false;
      const states = new Map((await this.#states(inRange.map((e) => e.id))).map((s, i) => [inRange[i]!.id, s]));
      for (const e of inRange) {
        last = e;
        scanned++;
        const s = states.get(e.id);
        if (s?.id !== undefined && this.#matches(q, allowed, s)) found.push(summaryOf(s));
        if (found.length === limit || scanned >= MAX_SCAN) break;
      }
      if (inRange.length === 0) break;
      upper = inRange[inRange.length - 1];
    }
    const more = !exhausted || (last !== undefined && upper !== undefined && before(upper, last));
    return { items: found, next: more && last ? `${last.score}:${last.id}` : undefined };
  }

  /**
   * Queued and retrying deliveries are all in the due zset, which holds only the waiting work:
   * read whole (when at most MAX_QUEUE_READ long), matched inside Redis, sorted by receipt, rather than walking every
   * delivery of the receipt indexes for the few that wait. Undefined: a backlog too long for that.
   */
  async #fromQueue(q: DeliveryQuery, limit: number): Promise<DeliveryPage | undefined> {
    const ids = await this.client.zrange(this.keys.due, 0, MAX_QUEUE_READ);
    if (ids.length > MAX_QUEUE_READ) return undefined;
    let upper = parseCursor(q.cursor);
    if (q.until !== undefined && (!upper || upper.score >= q.until)) upper = { score: q.until, id: "" };
    const candidates: Position[] = [];
    for (let i = 0; i < ids.length; i += ACTIVITY_CHUNK) {
      const chunk = ids.slice(i, i + ACTIVITY_CHUNK);
      const flat = (await this.#queueMatch(
        chunk.map((id) => this.keys.delivery(id)),
        [q.status!, q.event ?? "", q.repository ?? "", q.repositories ? "1" : "0", ...(q.repositories ?? [])],
      )) as (string | number)[];
      for (let j = 0; j < flat.length; j += 2) {
        const c = { id: chunk[Number(flat[j]) - 1]!, score: Number(flat[j + 1]) };
        if (q.since !== undefined && c.score < q.since) continue;
        if (upper && (upper.id === "" ? c.score >= upper.score : !before(c, upper))) continue;
        candidates.push(c);
      }
    }
    candidates.sort((a, b) => (before(a, b) ? 1 : before(b, a) ? -1 : 0));
    const page = candidates.slice(0, limit);
    const states = await this.#states(page.map((c) => c.id));
    const last = page[page.length - 1];
    return {
      items: states.filter((s) => s.id !== undefined && s.status === q.status).map(summaryOf),
      next: candidates.length > limit && last ? `${last.score}:${last.id}` : undefined,
    };
  }

  /**
   * Deliveries with a handler outcome. Failed outcomes come from their own zsets (kept by the
   * outcome script; few, so dense); receipts older than those zsets (a store from before them)
   * and other outcomes from the delivery indexes, walked inside Redis (outcomeScanLua).
   */
  async #byOutcome(q: DeliveryQuery, limit: number): Promise<DeliveryPage> {
    const k = this.keys;
    if (q.repository !== undefined && q.repositories && !q.repositories.includes(q.repository))
      return { items: [], next: undefined };
    const source =
      q.repository !== undefined
        ? k.byRepository(q.repository)
        : q.status === "dead"
          ? k.dead
          : q.event !== undefined
            ? k.byEvent(q.event)
            : k.all;
    let upper = parseCursor(q.cursor);
    if (q.until !== undefined && (!upper || upper.score >= q.until)) upper = { score: q.until, id: "" };
    const since = q.since ?? -Infinity;
    const indexedFrom = q.outcome === "failed" ? await this.#failedSince() : undefined;
    const ids: string[] = [];
    let next: Position | undefined;
    let below = upper;
    // Receipts older than the failed zsets can hold unindexed failures only if the store had deliveries before them.
    const older = indexedFrom === undefined || (indexedFrom > 0 && since < indexedFrom);
    if (indexedFrom !== undefined && (!upper || upper.score >= indexedFrom)) {
      const part = await this.#scan(
        q.handler !== undefined ? k.failedBy(q.handler) : k.failed,
        upper,
        Math.max(since, indexedFrom),
        limit,
        q,
      );
      ids.push(...part.ids);
      next = part.exhausted ? undefined : part.last;
      // A full page that ended the index: the next page goes on below it (older receipts).
      if (part.exhausted && older && ids.length === limit) next = part.last;
      below = { score: indexedFrom, id: "" };
    }
    if (!next && ids.length < limit && older) {
      const part = await this.#scan(source, below, since, limit - ids.length, q);
      ids.push(...part.ids);
      next = part.exhausted ? undefined : part.last;
    }
    const states = await this.#states(ids);
    return {
      items: states.filter((s) => s.id !== undefined).map(summaryOf),
      next: next ? `${next.score}:${next.id}` : undefined,
    };
  }

  /** Receipt time from which failed outcomes are all in their zsets; read once (it never changes once set). */
  async #failedSince(): Promise<number | undefined> {
    if (this.#indexedFrom === undefined) {
      const raw = await this.client.get(this.keys.failedSince);
      if (raw !== null) this.#indexedFrom = Number(raw);
    }
    return this.#indexedFrom;
  }

  /**
   * At open: failed outcomes of deliveries received from now on are all indexed; older ones are
   * if the store was empty. The first Steward with the failed zsets sets it, once.
   */
  async prepare(): Promise<void> {
    if ((await this.client.exists(this.keys.failedSince)) === 1) return;
    const newest = await this.client.zrevrange(this.keys.all, 0, 0, "WITHSCORES");
    await this.client.set(this.keys.failedSince, newest.length ? String(Number(newest[1]) + 1) : "0", "NX");
  }

  /**
   * Deliveries of index `source` strictly older than `upper` and received since `since`, newest
   * first, whose outcomes match: candidates read in batches, checked in Redis, at most
   * MAX_OUTCOME_SCAN of them (a bounded time); `last` is where the next page goes on.
   */
  async #scan(
    source: string,
    upper: Position | undefined,
    since: number,
    limit: number,
    q: DeliveryQuery,
  ): Promise<{ ids: string[]; last: Position | undefined; exhausted: boolean }> {
    const min = Number.isFinite(since) ? String(since) : "-inf";
    const found: string[] = [];
    let below: Position | undefined = upper;
    let offset = 0;
    let scanned = 0;
    let last: Position | undefined;
    while (found.length < limit && scanned < MAX_OUTCOME_SCAN) {
      // Below a position with no id: strictly below its score.
      const max = below === undefined ? "+inf" : below.id === "" ? `(${below.score}` : String(below.score);
      const flat = await this.client.zrevrangebyscore(source, max, min, "WITHSCORES", "LIMIT", offset, OUTCOME_BATCH);
      const candidates: Position[] = [];
      for (let i = 0; i < flat.length; i += 2) {
        const c = { id: flat[i]!, score: Number(flat[i + 1]) };
        if (!below || below.id === "" || before(c, below)) candidates.push(c);
      }
      const matches = candidates.length ? await this.#outcomesMatch(candidates, q) : [];
      for (let i = 0; i < candidates.length; i++) {
        scanned++;
        last = candidates[i]!;
        if (matches[i] === 1) found.push(last.id);
        if (found.length >= limit || scanned >= MAX_OUTCOME_SCAN) break;
      }
      if (flat.length < OUTCOME_BATCH * 2 && found.length < limit && scanned < MAX_OUTCOME_SCAN)
        return { ids: found, last, exhausted: true };
      // A whole batch of ties at the position's own score: look further along the same score.
      if (candidates.length) {
        below = last;
        offset = 0;
      } else offset += OUTCOME_BATCH;
    }
    return { ids: found, last, exhausted: !last };
  }

  async #outcomesMatch(candidates: Position[], q: DeliveryQuery): Promise<number[]> {
    const k = this.keys;
    return (await this.#outcomeMatch(
      [...candidates.map((c) => k.outcomes(c.id)), ...candidates.map((c) => k.delivery(c.id))],
      [
        q.handler ?? "",
        q.outcome ?? "",
        q.event ?? "",
        q.status ?? "",
        q.repositories ? "1" : "0",
        q.repository ?? "",
        ...(q.repositories ?? []),
      ],
    )) as number[];
  }

  #states(ids: string[]): Promise<Record<string, string>[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return pipelined(this.client, (p) => ids.forEach((id) => p.hgetall(this.keys.delivery(id))));
  }

  #matches(q: DeliveryQuery, allowed: Set<string> | undefined, s: Record<string, string>): boolean {
    if (allowed && !allowed.has(s.repo ?? "")) return false;
    if (q.event !== undefined && s.event !== q.event) return false;
    if (q.repository !== undefined && s.repo !== q.repository) return false;
    return q.status === undefined || s.status === q.status;
  }

  async deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> {
    const ids = await this.client.zrevrangebyscore(this.keys.all, "+inf", since, "LIMIT", 0, MAX_ACTIVITY);
    const counts = new Map<string, number>();
    for (let i = 0; i < ids.length; i += ACTIVITY_CHUNK) {
      const flat = (await this.#activity(
        ids.slice(i, i + ACTIVITY_CHUNK).map((id) => this.keys.delivery(id)),
        [repositories ? "1" : "0", ...(repositories ?? [])],
      )) as (string | number)[];
      for (let j = 0; j < flat.length; j += 2)
        counts.set(String(flat[j]), (counts.get(String(flat[j])) ?? 0) + Number(flat[j + 1]));
    }
    const rows: ActivityRow[] = [];
    for (const [key, count] of counts) {
      const [minute, status] = key.split(":");
      rows.push({ minute: Number(minute), status: status as DeliveryStatus, count });
    }
    return rows.sort((a, b) => a.minute - b.minute || (a.status < b.status ? -1 : 1));
  }

  async decisionsOf(ids: readonly string[]): Promise<Map<string, DecisionLine[]>> {
    const page = ids.slice(0, MAX_PAGE);
    const hashes = await pipelined<Record<string, string>>(this.client, (p) =>
      page.forEach((id) => p.hgetall(this.keys.outcomes(id))),
    );
    const out = new Map<string, DecisionLine[]>();
    page.forEach((id, i) => {
      const outcomes = toOutcomes(hashes[i]!);
      if (outcomes.length)
        out.set(
          id,
          outcomes.map((o) => decisionLine(o.handler, o.status, o.detail)),
        );
    });
    return out;
  }

  async summariesOf(ids: readonly string[]): Promise<DeliverySummary[]> {
    const states = await this.#states(ids.slice(0, MAX_PAGE));
    return states.filter((s) => s.id !== undefined).map(summaryOf);
  }

  /** Every dead letter of the repositories, counted inside Redis a chunk at a time (not one page of them). */
  async countDead(repositories?: readonly string[]): Promise<number> {
    if (!repositories) return this.client.zcard(this.keys.dead);
    const ids = await this.client.zrange(this.keys.dead, 0, -1);
    let dead = 0;
    for (let i = 0; i < ids.length; i += ACTIVITY_CHUNK) {
      const flat = (await this.#activity(
        ids.slice(i, i + ACTIVITY_CHUNK).map((id) => this.keys.delivery(id)),
        ["1", ...repositories],
      )) as (string | number)[];
      for (let j = 0; j < flat.length; j += 2) if (String(flat[j]).endsWith(":dead")) dead += Number(flat[j + 1]);
    }
    return dead;
  }
}
