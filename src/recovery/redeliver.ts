// Redelivery sweeper. GitHub does not retry a failed webhook delivery by itself, so
// deliveries sent while Steward was down or answering errors would be lost. The sweeper
// reads the app's recent deliveries, finds those that never reached Steward, and asks
// GitHub to deliver them again — once per delivery.
import type { Logger } from "pino";
import type { InstallationOctokit } from "../handler.js";
import type { Store } from "../store/types.js";
import { PROCESS_OWNER } from "../lifecycle/process-owner.js";

/** One attempt as listed by `GET /app/hook/deliveries`. */
export interface HookDeliveryAttempt {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  status_code: number;
  event: string;
  action: string | null;
}

export interface RedeliveryCandidate {
  guid: string;
  /** The attempt to redeliver (the latest one). */
  id: number;
  event: string;
  deliveredAt: string;
  lastStatus: number;
}

/**
 * Pure: which deliveries must be requested again. A delivery (guid) qualifies when no attempt
 * got a 2xx, Steward has not recorded it, and its latest attempt is inside the look-back window.
 */
export function findRedeliveries(
  attempts: readonly HookDeliveryAttempt[],
  opts: { now: Date; lookbackMs: number; known: (guid: string) => boolean },
): RedeliveryCandidate[] {
  const byGuid = new Map<string, HookDeliveryAttempt[]>();
  for (const a of attempts) {
    const list = byGuid.get(a.guid);
    if (list) list.push(a);
    else byGuid.set(a.guid, [a]);
  }
  const since = opts.now.getTime() - opts.lookbackMs;
  const out: RedeliveryCandidate[] = [];
  for (const [guid, list] of byGuid) {
    if (list.some((a) => a.status_code >= 200 && a.status_code < 300)) continue;
    if (opts.known(guid)) continue;
    const latest = list.reduce((a, b) =>
      Date.parse(b.delivered_at) > Date.parse(a.delivered_at) || (b.delivered_at === a.delivered_at && b.id > a.id)
        ? b
        : a,
    );
    if (Date.parse(latest.delivered_at) < since) continue;
    out.push({
      guid,
      id: latest.id,
      event: latest.event,
      deliveredAt: latest.delivered_at,
      lastStatus: latest.status_code,
    });
  }
  return out.sort((a, b) => a.deliveredAt.localeCompare(b.deliveredAt));
}

/** Kept longer than GitHub keeps deliveries. */
const ASKED_TTL_MS = 7 * 86_400_000;
/** An "asking" record older than this was left by a sweep that died mid-request. */
const ASKING_STALE_MS = 30_000;

interface AskRecord {
  id: number;
  at: string;
  state: "asking" | "asked";
  by?: string;
}

/**
 * Claim the right to ask for one failed attempt. "asking" is written before the request and
 * "asked" after it: a process killed in between leaves "asking", and the next sweep (of another
 * process, or after the record went stale) asks again. Asking twice is harmless (Steward
 * dedups by delivery id); never asking would lose the delivery.
 */
async function claimAsk(store: Store, key: string, id: number, now: Date): Promise<boolean> {
  const asking: AskRecord = { id, at: now.toISOString(), state: "asking", by: PROCESS_OWNER };
  if (await store.claim(key, { ttlMs: ASKED_TTL_MS, value: asking })) return true;
  const held = await store.get<AskRecord>(key);
  if (!held || held.state !== "asking") return false;
  const stale = held.by !== PROCESS_OWNER || now.getTime() - Date.parse(held.at) > ASKING_STALE_MS;
  if (!stale) return false;
  await store.set(key, asking, { ttlMs: ASKED_TTL_MS });
  return true;
}

/** Store key of the newest delivery attempt a complete sweep has decided. */
const MARK_KEY = "redeliver:mark";

export interface SweepResult {
  scanned: number;
  requested: string[];
  alreadyAsked: number;
  failed: { guid: string; error: string }[];
}

/**
 * Read the app's deliveries newest first until the look-back window is passed, then
 * request a redelivery of each candidate. A store claim per delivery attempt makes sure one
 * failed attempt is never asked for twice, across sweeps and restarts.
 */
export async function sweepRedeliveries(opts: {
  app: InstallationOctokit;
  store: Store;
  isKnown: (guid: string) => Promise<boolean>;
  logger: Logger;
  lookbackMs: number;
  now?: Date;
  /** Upper bound of redelivery requests per sweep (the rest waits for the next sweep). */
  maxRequests?: number;
  /** Shutdown: the sweep stops between requests; the next one (after restart) reads on from the mark. */
  signal?: AbortSignal;
}): Promise<SweepResult> {
  const now = opts.now ?? new Date();
  const since = now.getTime() - opts.lookbackMs;
  // Attempts up to the mark were all decided by an earlier sweep; a redelivery that failed
  // since is a newer attempt. Reading only what is new keeps a sweep to a page or two.
  const mark = await opts.store.get<number>(MARK_KEY);
  const attempts: HookDeliveryAttempt[] = [];
  for await (const page of opts.app.paginate.iterator("GET /app/hook/deliveries", { per_page: 100 })) {
    const items = page.data as unknown as HookDeliveryAttempt[];
    attempts.push(...items);
    if (opts.signal?.aborted) break;
    // Newest first: once a whole page is older than the window (or the mark), older pages cannot matter.
    if (
      items.length === 0 ||
      items.every((a) => Date.parse(a.delivered_at) < since || (mark !== undefined && a.id <= mark))
    )
      break;
  }
  // Only a delivery no attempt of which got a 2xx can need redelivering: the store is asked about
  // those alone (a first sweep reads a day of deliveries, nearly all of them answered).
  const answered = new Set(attempts.filter((a) => a.status_code >= 200 && a.status_code < 300).map((a) => a.guid));
  const known = new Set<string>();
  for (const guid of new Set(attempts.map((a) => a.guid)))
    if (!answered.has(guid) && (await opts.isKnown(guid))) known.add(guid);
  const candidates = findRedeliveries(attempts, { now, lookbackMs: opts.lookbackMs, known: (g) => known.has(g) });
  const result: SweepResult = { scanned: attempts.length, requested: [], alreadyAsked: 0, failed: [] };
  const limit = opts.maxRequests ?? 500;
  let stopped = false;
  for (const c of candidates.slice(0, limit)) {
    if (opts.signal?.aborted) {
      stopped = true;
      break;
    }
    // Keyed by the attempt: one request per failed attempt, so a redelivery that failed in
    // turn (Steward still down) is asked for again once its own failed attempt is listed.
    const key = `redeliver:${c.guid}:${c.id}`;
    if (!(await claimAsk(opts.store, key, c.id, now))) {
      result.alreadyAsked++;
      continue;
    }
    try {
      await opts.app.request("POST /app/hook/deliveries/{delivery_id}/attempts", { delivery_id: c.id });
      await opts.store.set(key, { id: c.id, at: now.toISOString(), state: "asked" } satisfies AskRecord, {
        ttlMs: ASKED_TTL_MS,
      });
      result.requested.push(c.guid);
    } catch (e) {
      // Let the next sweep try again.
      await opts.store.release(key);
      result.failed.push({ guid: c.guid, error: (e as Error).message });
    }
  }
  // Move the mark only when every candidate was asked for; otherwise the next sweep reads them again.
  if (
    !stopped &&
    !opts.signal?.aborted &&
    result.failed.length === 0 &&
    candidates.length <= limit &&
    attempts.length > 0
  ) {
    const newest = Math.max(...attempts.map((a) => a.id));
    if (mark === undefined || newest > mark) await opts.store.set(MARK_KEY, newest, { ttlMs: 7 * 86_400_000 });
  }
  opts.logger.info(
    { scanned: result.scanned, requested: result.requested.length, failed: result.failed.length },
    "redelivery sweep",
  );
  return result;
}
