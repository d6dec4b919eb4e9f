// The deliveries filters from a query string. A value the console cannot apply is never passed
// to a store and never dropped silently either: it is returned as refused, and the page says so
// (an action refuses to run under a filter it cannot apply: its scope would differ from the one shown).
import type { DeliveryStatus, HandlerOutcomeRecord } from "../../store/records.js";
import type { DeliveryQuery, DeliverySummary } from "../../store/browse.js";
import { html, type Html } from "../html.js";

export const DELIVERY_STATUSES: DeliveryStatus[] = ["queued", "running", "failed", "done", "dead"];
export const OUTCOMES: HandlerOutcomeRecord["status"][] = ["done", "skipped", "failed"];
const PAGE = 50;
/** The filter names, in the order chips show them. */
export const FILTER_NAMES = ["event", "repository", "status", "handler", "outcome", "since", "until", "show"] as const;
/** An event as the lists spell it: `workflow_run` or `workflow_run.completed`. */
const EVENT = /^([a-z_]{1,64})(?:\.([a-z_]{1,64}))?$/;

export interface Refusal {
  name: string;
  value: string;
  why: string;
}

export interface Filters {
  query: Omit<DeliveryQuery, "repositories">;
  /** The action of `event.action`: the store selects by event, the console by action (`matches`). */
  action?: string;
  refused: Refusal[];
}

function timeParam(raw: string): number | undefined {
  const t = Date.parse(/Z|[+-]\d\d:\d\d$/.test(raw) ? raw : `${raw}Z`);
  return Number.isFinite(t) ? t : undefined;
}

/** Every filter of the query string, applied or refused. */
export function readFilters(params: URLSearchParams, handlers: readonly string[]): Filters {
  const query: Omit<DeliveryQuery, "repositories"> = { limit: PAGE };
  const refused: Refusal[] = [];
  let action: string | undefined;
  const refuse = (name: string, value: string, why: string) => refused.push({ name, value: value.slice(0, 80), why });
  const event = params.get("event");
  if (event) {
    const m = EVENT.exec(event);
    if (m) {
      query.event = m[1]!;
      if (m[2]) action = m[2];
    } else refuse("event", event, "not an event name (like workflow_run or workflow_run.completed)");
  }
  const repository = params.get("repository");
  if (repository) {
    if (repository.length <= 200) query.repository = repository;
    else refuse("repository", repository, "longer than any repository name");
  }
  const status = params.get("status");
  if (status) {
    if ((DELIVERY_STATUSES as string[]).includes(status)) query.status = status as DeliveryStatus;
    else refuse("status", status, `not a delivery status (${DELIVERY_STATUSES.join(", ")})`);
  }
  const handler = params.get("handler");
  if (handler) {
    if (handlers.includes(handler)) query.handler = handler;
    else refuse("handler", handler, "no handler of that name runs here");
  }
  const outcome = params.get("outcome");
  if (outcome) {
    if ((OUTCOMES as string[]).includes(outcome)) query.outcome = outcome as HandlerOutcomeRecord["status"];
    else refuse("outcome", outcome, `not a handler outcome (${OUTCOMES.join(", ")})`);
  }
  for (const name of ["since", "until"] as const) {
    const raw = params.get(name);
    if (!raw) continue;
    const at = timeParam(raw);
    if (at !== undefined) query[name] = at;
    else refuse(name, raw, "not a date and time (like 2026-01-31T14:00)");
  }
  const cursor = params.get("cursor");
  if (cursor && cursor.length <= 300) query.cursor = cursor;
  return { query, ...(action ? { action } : {}), refused };
}

/** Whether a delivery the store selected matches what the store could not select by (the action). */
export function matches(filters: Filters, d: Pick<DeliverySummary, "action">): boolean {
  return filters.action === undefined || d.action === filters.action;
}

/** The query string of the filters (no cursor): links to older pages and the live stream keep them. */
export function filterQuery(params: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  for (const k of FILTER_NAMES) {
    const v = params.get(k);
    if (v) out.set(k, v);
  }
  return out;
}

/** The filters in words, as a confirmation or a chip reads them: `event = workflow_run.completed`. */
export function describeFilters(params: URLSearchParams): string {
  const parts = [...filterQuery(params)].map(([k, v]) => `${k} = ${v}`);
  return parts.length ? parts.join(", ") : "no filter (every dead letter you may replay)";
}

/** The filters that were not applied, and why: shown above the list (never dropped silently). */
export function refusalNote(refused: readonly Refusal[]): Html {
  return refused.length
    ? html`<div role="alert"><p>These filters cannot be applied, so they are not:</p><ul>${refused.map((r) => html`<li><code>${r.name}=${r.value}</code>: ${r.why}</li>`)}</ul></div>`
    : html``;
}
