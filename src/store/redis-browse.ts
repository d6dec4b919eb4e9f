// The console's reads of the Redis store: newest first from the receipt-time zsets (every
// delivery, per repository, per event, dead letters), merged when the reader may see several
// repositories, then filtered on the delivery hashes read in one pipeline per batch.
import type { Redis } from "ioredis";
import type { DeliveryStatus } from "../queue/engine-types.js";
import { optional, optionalNumber } from "./redis-script.js";
import type { RedisKeys } from "./redis-keys.js";
import { pageLimit, type ActivityRow, type DeliveryPage, type DeliveryQuery, type DeliverySummary } from "./browse.js";
import type { BrowsePart } from "./contract.js";

const BATCH = 200;
/** Deliveries read for one page at most: a rare filter answers a short page with a cursor, not a scan of everything. */
const MAX_SCAN = 20_000;
/** Time spent scanning for one page at most (after the first batch), for the same reason. */
const SCAN_BUDGET_MS = 100;
/** Above this many readable repositories, read every delivery and filter rather than merging one zset per repository. */
const MAX_MERGED = 64;
/** The overview counts at most this many recent deliveries. */
const MAX_ACTIVITY = 20_000;

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
  constructor(
    private readonly client: Redis,
    private readonly keys: RedisKeys,
  ) {}

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
    if (q.repository !== undefined) return { keys: !allowed || allowed.has(q.repository) ? [k.byRepository(q.repository)] : [], allowed };
    if (q.status === "dead") return { keys: [k.dead], allowed };
    // An event index is filtered by the readable repositories in memory: usually fewer reads than merging one zset per repository.
    if (q.event !== undefined) return { keys: [k.byEvent(q.event)], allowed };
    if (allowed && allowed.size <= MAX_MERGED) return { keys: [...allowed].map((r) => k.byRepository(r)), allowed };
    return { keys: [k.all], allowed };
  }

  async browseDeliveries(q: DeliveryQuery): Promise<DeliveryPage> {
    const limit = pageLimit(q.limit);
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
      const inRange = q.since === undefined ? merged : merged.filter((e) => e.score >= q.since!);
      if (inRange.length < merged.length) exhausted = true;
      // Outcome filters are checked first, on the outcomes alone: most candidates end there.
      const outcomeOk = q.handler !== undefined || q.outcome !== undefined ? await this.#outcomeMatches(inRange.map((e) => e.id), q) : undefined;
      const wanted = outcomeOk ? inRange.filter((_, i) => outcomeOk[i]) : inRange;
      const states = new Map((await this.#states(wanted.map((e) => e.id))).map((s, i) => [wanted[i]!.id, s]));
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

  async #exec<T>(fill: (p: ReturnType<Redis["pipeline"]>) => void): Promise<T[]> {
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

  /** Per id: whether the handler (or any handler) has the wanted outcome. One field read per id when the handler is named. */
  async #outcomeMatches(ids: string[], q: DeliveryQuery): Promise<boolean[]> {
    if (ids.length === 0) return [];
    const has = (json: string | null | undefined) => json != null && (q.outcome === undefined || (JSON.parse(json) as { status: string }).status === q.outcome);
    if (q.handler !== undefined) {
      const values = await this.#exec<string | null>((p) => ids.forEach((id) => p.hget(this.keys.outcomes(id), q.handler!)));
      return values.map(has);
    }
    const all = await this.#exec<string[]>((p) => ids.forEach((id) => p.hvals(this.keys.outcomes(id))));
    return all.map((vals) => vals.some(has));
  }

  #matches(q: DeliveryQuery, allowed: Set<string> | undefined, s: Record<string, string>): boolean {
    if (allowed && !allowed.has(s.repo ?? "")) return false;
    if (q.event !== undefined && s.event !== q.event) return false;
    if (q.repository !== undefined && s.repo !== q.repository) return false;
    return q.status === undefined || s.status === q.status;
  }

  async deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> {
    const ids = await this.client.zrevrangebyscore(this.keys.all, "+inf", String(since), "LIMIT", 0, MAX_ACTIVITY);
    const allowed = repositories ? new Set(repositories) : undefined;
    const counts = new Map<string, ActivityRow>();
    for (let i = 0; i < ids.length; i += BATCH) {
      const rows = await this.#exec<(string | null)[]>((p) => ids.slice(i, i + BATCH).forEach((id) => p.hmget(this.keys.delivery(id), "receivedAt", "status", "repo")));
      for (const [at, status, repo] of rows) {
        if (at === null || status === null || (allowed && !allowed.has(repo ?? ""))) continue;
        const minute = Math.floor(Number(at) / 60_000) * 60_000;
        const key = `${minute}:${status}`;
        const row = counts.get(key) ?? { minute, status: status as DeliveryStatus, count: 0 };
        row.count++;
        counts.set(key, row);
      }
    }
    return [...counts.values()].sort((a, b) => a.minute - b.minute);
  }

  async countDead(repositories?: readonly string[]): Promise<number> {
    if (!repositories) return this.client.zcard(this.keys.dead);
    const page = await this.browseDeliveries({ status: "dead", repositories, limit: 200 });
    return page.items.length;
  }
}
