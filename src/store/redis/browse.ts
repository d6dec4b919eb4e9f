// The console's reads of the Redis store: newest first from the receipt-time zsets (every
// delivery, per repository, per event, dead letters), merged when the reader may see several
// repositories, then filtered on the delivery hashes read in one pipeline per batch. Outcome
// filters and the overview's counts run inside Redis (Lua): one round trip, not one per batch.
import type { RedisClient } from "./connect.js";
import type { DeliveryStatus } from "../records.js";
import { defineScript, optional, optionalNumber, type Script } from "./script.js";
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
/** The overview counts at most this many recent deliveries. */
const MAX_ACTIVITY = 20_000;

// Per-minute counts of the deliveries received since ARGV[2] (newest ARGV[3] at most), by status,
// counted inside Redis: one round trip instead of one HMGET per delivery over the network.
// KEYS: all. ARGV: prefix, since, max, scoped ('1': only the repositories from ARGV[5] on).
// Returns [minute:status, count, ...].
const activityLua = `
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local allowed = nil
if ARGV[4] == '1' then
  allowed = {}
  for i = 5, #ARGV do allowed[ARGV[i]] = true end
end
local counts = {}
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', ARGV[1] .. 'd:' .. id, 'receivedAt', 'status', 'repo')
  if f[1] and f[2] and (not allowed or allowed[f[3] or '']) then
    local key = string.format('%.0f', math.floor(tonumber(f[1]) / 60000) * 60000) .. ':' .. f[2]
    counts[key] = (counts[key] or 0) + 1
  end
end
local out = {}
for k, v in pairs(counts) do
  out[#out + 1] = k
  out[#out + 1] = v
end
return out`;

// Deliveries with a handler outcome, newest first, checked inside Redis: the candidates of one
// index (KEYS[1]) strictly older than the position, their outcomes read and matched there, so a
// rare outcome costs one round trip per page rather than one per 200 candidates. At most
// ARGV[9] candidates per call (a bounded time in Redis); the caller gets a cursor to go on.
// KEYS: source zset. ARGV: prefix, upper score, upper id ('' = below the score), since ('-inf'),
// handler ('' = any), outcome ('' = any), limit, event ('' = any), max scanned, status ('' = any),
// scoped ('1': only the repositories from ARGV[12] on), repository ('' = any).
// Returns { ids..., '|', lastScore, lastId, exhausted ('1'/'0') }.
const outcomeScanLua = `
local prefix, handler, event, status, repository = ARGV[1], ARGV[5], ARGV[8], ARGV[10], ARGV[12]
local limit, maxScan = tonumber(ARGV[7]), tonumber(ARGV[9])
local pat = nil
if ARGV[6] ~= '' then pat = '"status":"' .. ARGV[6] .. '"' end
local allowed = nil
if ARGV[11] == '1' then
  allowed = {}
  for i = 13, #ARGV do allowed[ARGV[i]] = true end
end
local maxScore, upperId = ARGV[2], ARGV[3]
local found, scanned, offset = {}, 0, 0
local lastScore, lastId = '', ''
local exhausted = '0'
while #found < limit and scanned < maxScan do
  local range = maxScore
  if upperId == '' and maxScore ~= '+inf' then range = '(' .. maxScore end
  local flat = redis.call('ZREVRANGEBYSCORE', KEYS[1], range, ARGV[4], 'WITHSCORES', 'LIMIT', offset, 500)
  local progressed = false
  for i = 1, #flat, 2 do
    local id, score = flat[i], flat[i + 1]
    if upperId == '' or tonumber(score) < tonumber(maxScore) or id < upperId then
      progressed = true
      scanned = scanned + 1
      lastScore, lastId = score, id
      local ok = false
      if handler ~= '' then
        local o = redis.call('HGET', prefix .. 'o:' .. id, handler)
        ok = o and (not pat or string.find(o, pat, 1, true)) and true or false
      else
        for _, o in ipairs(redis.call('HVALS', prefix .. 'o:' .. id)) do
          if not pat or string.find(o, pat, 1, true) then ok = true break end
        end
      end
      if ok and (event ~= '' or status ~= '' or allowed or repository ~= '') then
        local f = redis.call('HMGET', prefix .. 'd:' .. id, 'event', 'status', 'repo')
        ok = (event == '' or f[1] == event) and (status == '' or f[2] == status)
          and (repository == '' or f[3] == repository) and (not allowed or allowed[f[3] or '']) and true or false
      end
      if ok then found[#found + 1] = id end
      if #found >= limit or scanned >= maxScan then break end
    end
  end
  if #flat < 1000 and (#found < limit and scanned < maxScan) then
    exhausted = '1'
    break
  end
  if progressed then
    maxScore, upperId, offset = lastScore, lastId, 0
  else
    offset = offset + 500
  end
end
found[#found + 1] = '|'
found[#found + 1] = lastScore
found[#found + 1] = lastId
found[#found + 1] = exhausted
return found`;

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
  readonly #outcomeScan: Script;
  #indexedFrom: number | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.#activity = defineScript(client, "stewardBrowseActivity", 1, activityLua);
    this.#outcomeScan = defineScript(client, "stewardBrowseOutcomes", 1, outcomeScanLua);
  }

  /** Up to BATCH members of `key` strictly older than `upper`, newest first; `full` when more may follow. */
  async #below(key: string, upper: Position | undefined): Promise<{ entries: Entry[]; full: boolean }> {
    for (let offset = 0; ; offset += BATCH) {
      const max = upper ? String(upper.score) : "+inf";
      const flat = await this.client.zrevrangebyscore(key, max, "-inf", "WITHSCORES", "LIMIT", offset, BATCH);
      const entries: Entry[] = [];
      for (let i = 0; i < flat.length; i += 2) {
        const e = { key, id: flat[i]!, score: Number(flat[i + 1]) };
        if (!upper || before(e, upper)) entries.push(e);
      }
      const full = flat.length === BATCH * 2;
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
    const { keys, allowed } = this.#sources(q);
    let upper = parseCursor(q.cursor);
    if (q.until !== undefined && (!upper || upper.score >= q.until)) upper = { score: q.until, id: "" };
    const found: DeliverySummary[] = [];
    let scanned = 0;
    let last: Position | undefined;
    let exhausted = keys.length === 0;
    const deadline = Date.now() + SCAN_BUDGET_MS;
    while (!exhausted && found.length < limit && scanned < MAX_SCAN && (scanned === 0 || Date.now() < deadline)) {
      const batches = await Promise.all(keys.map((key) => this.#below(key, upper)));
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

  async #scan(
    source: string,
    upper: Position | undefined,
    since: number,
    limit: number,
    q: DeliveryQuery,
  ): Promise<{ ids: string[]; last: Position | undefined; exhausted: boolean }> {
    const reply = (await this.#outcomeScan(
      [source],
      [
        this.keys.prefix,
        upper ? String(upper.score) : "+inf",
        upper?.id ?? "",
        Number.isFinite(since) ? String(since) : "-inf",
        q.handler ?? "",
        q.outcome ?? "",
        limit,
        q.event ?? "",
        MAX_OUTCOME_SCAN,
        q.status ?? "",
        q.repositories ? "1" : "0",
        q.repository ?? "",
        ...(q.repositories ?? []),
      ],
    )) as string[];
    const bar = reply.lastIndexOf("|");
    const [lastScore, lastId, exhausted] = reply.slice(bar + 1);
    return {
      ids: reply.slice(0, bar),
      last: lastId ? { score: Number(lastScore), id: lastId } : undefined,
      exhausted: exhausted === "1" || !lastId,
    };
  }

  async #exec<T>(fill: (p: ReturnType<RedisClient["pipeline"]>) => void): Promise<T[]> {
    const p = this.client.pipeline();
    fill(p);
    return ((await p.exec()) ?? []).map(([error, value]) => {
      if (error) throw error;
      return value as T;
    });
  }

  #states(ids: string[]): Promise<Record<string, string>[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.#exec((p) => ids.forEach((id) => p.hgetall(this.keys.delivery(id))));
  }

  #matches(q: DeliveryQuery, allowed: Set<string> | undefined, s: Record<string, string>): boolean {
    if (allowed && !allowed.has(s.repo ?? "")) return false;
    if (q.event !== undefined && s.event !== q.event) return false;
    if (q.repository !== undefined && s.repo !== q.repository) return false;
    return q.status === undefined || s.status === q.status;
  }

  async deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> {
    const flat = (await this.#activity(
      [this.keys.all],
      [this.keys.prefix, since, MAX_ACTIVITY, repositories ? "1" : "0", ...(repositories ?? [])],
    )) as (string | number)[];
    const rows: ActivityRow[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const [minute, status] = String(flat[i]).split(":");
      rows.push({ minute: Number(minute), status: status as DeliveryStatus, count: Number(flat[i + 1]) });
    }
    return rows.sort((a, b) => a.minute - b.minute || (a.status < b.status ? -1 : 1));
  }

  async decisionsOf(ids: readonly string[]): Promise<Map<string, DecisionLine[]>> {
    const page = ids.slice(0, MAX_PAGE);
    const hashes = await Promise.all(page.map((id) => this.client.hgetall(this.keys.outcomes(id))));
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

  async countDead(repositories?: readonly string[]): Promise<number> {
    if (!repositories) return this.client.zcard(this.keys.dead);
    const page = await this.browseDeliveries({ status: "dead", repositories, limit: 200 });
    return page.items.length;
  }
}
