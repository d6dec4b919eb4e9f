// The deliveries filters from a query string: unknown values are dropped, never passed to a store.
import type { DeliveryStatus, HandlerOutcomeRecord } from "../../store/records.js";
import type { DeliveryQuery } from "../../store/browse.js";

export const DELIVERY_STATUSES: DeliveryStatus[] = ["queued", "running", "failed", "done", "dead"];
export const OUTCOMES: HandlerOutcomeRecord["status"][] = ["done", "skipped", "failed"];
const PAGE = 50;

function timeParam(raw: string | null): number | undefined {
  if (!raw) return undefined;
  const t = Date.parse(/Z|[+-]\d\d:\d\d$/.test(raw) ? raw : `${raw}Z`);
  return Number.isFinite(t) ? t : undefined;
}

export function filtersOf(params: URLSearchParams, handlers: readonly string[]): Omit<DeliveryQuery, "repositories"> {
  const q: Omit<DeliveryQuery, "repositories"> = { limit: PAGE };
  const event = params.get("event");
  if (event && /^[a-z_]{1,64}$/.test(event)) q.event = event;
  const repository = params.get("repository");
  if (repository && repository.length <= 200) q.repository = repository;
  const status = params.get("status");
  if (status && (DELIVERY_STATUSES as string[]).includes(status)) q.status = status as DeliveryStatus;
  const handler = params.get("handler");
  if (handler && handlers.includes(handler)) q.handler = handler;
  const outcome = params.get("outcome");
  if (outcome && (OUTCOMES as string[]).includes(outcome)) q.outcome = outcome as HandlerOutcomeRecord["status"];
  const since = timeParam(params.get("since"));
  if (since !== undefined) q.since = since;
  const until = timeParam(params.get("until"));
  if (until !== undefined) q.until = until;
  const cursor = params.get("cursor");
  if (cursor && cursor.length <= 300) q.cursor = cursor;
  return q;
}

/** The query string of the filters (no cursor): links to older pages and the live stream keep them. */
export function filterQuery(params: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  for (const k of ["event", "repository", "status", "handler", "outcome", "since", "until"]) {
    const v = params.get(k);
    if (v) out.set(k, v);
  }
  return out;
}
