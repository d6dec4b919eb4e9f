// /console/deliveries: newest first, filtered, a page at a time; the first page updates live.
// Each row says in one line what each handler decided; deliveries no handler took (every handler
// skipped them, or none subscribes) are hidden unless asked for, and the page says how many.
import { html, statusBadge, time, type Html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";
import { DELIVERY_STATUSES, filterQuery, matches, OUTCOMES, readFilters, refusalNote } from "./filters.js";
import type { DecisionLine, DeliveryPage, DeliverySummary } from "../../store/browse.js";
import { markdownInline } from "../markdown.js";
import { maySee } from "./scope.js";

/** Finished with every handler skipping it (or none running on it): nothing was done. */
export function noHandlerTook(d: DeliverySummary, decisions: readonly DecisionLine[] | undefined): boolean {
  return d.status === "done" && (decisions ?? []).every((x) => x.status === "skipped");
}

/** What the handlers decided, one line: those that acted (done or failed); else why nothing happened yet. */
function decisionCell(d: DeliverySummary, decisions: readonly DecisionLine[] | undefined): Html {
  const acted = (decisions ?? []).filter((x) => x.status !== "skipped");
  if (acted.length === 0) {
    if (noHandlerTook(d, decisions)) return html`<span class="note">no handler</span>`;
    return html`<span class="note">${d.status === "queued" || d.status === "running" ? "not decided yet" : "no decision recorded"}</span>`;
  }
  return html`${acted.map(
    (x, i) =>
      html`${i ? "; " : ""}<strong>${x.handler}</strong>${x.status === "failed" ? " failed" : ""}${x.line ? html`: ${markdownInline(x.line)}` : ""}`,
  )}`;
}

/** `replay`: each row's replay button (dead letters); `acknowledge`: and its acknowledge button. */
export function deliveryRows(
  page: DeliveryPage,
  opts: { replay?: { csrf: string }; acknowledge?: boolean; decisions?: Map<string, DecisionLine[]> } = {},
): Html {
  if (page.items.length === 0) {
    // A rare filter stops searching after a bounded stretch: say so rather than "none".
    return page.next
      ? html`<p class="note">None among the deliveries searched so far; older ones may match.</p>`
      : html`<p class="note">No deliveries match.</p>`;
  }
  return html`<table><thead><tr><th scope="col">Received</th><th scope="col">Event</th><th scope="col">Repository</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Delivery</th>${opts.decisions ? html`<th scope="col">Decision</th>` : ""}${opts.replay ? html`<th scope="col">Last error</th><th scope="col">Action</th>` : ""}</tr></thead>
  <tbody>${page.items.map(
    (d) => html`<tr data-delivery="${d.id}">
    <td>${time(d.receivedAt)}</td><td>${d.event}${d.action ? `.${d.action}` : ""}</td><td>${d.repository ?? "—"}</td>
    <td>${statusBadge(d.status)}</td><td>${d.attempts}</td><td><a href="/console/deliveries/${encodeURIComponent(d.id)}">${d.id}</a></td>${opts.decisions ? html`<td data-k="decision">${decisionCell(d, opts.decisions.get(d.id))}</td>` : ""}
    ${
      opts.replay
        ? html`<td>${d.lastError ?? ""}</td><td><form method="post" action="/console/deliveries/${encodeURIComponent(d.id)}/replay">
      <input type="hidden" name="csrf" value="${opts.replay.csrf}"><input type="hidden" name="back" value="/console/dead">
      <button type="submit">Replay ${d.id}</button></form>${
        opts.acknowledge
          ? html`<form method="post" action="/console/deliveries/${encodeURIComponent(d.id)}/acknowledge">
      <input type="hidden" name="csrf" value="${opts.replay.csrf}"><input type="hidden" name="back" value="/console/dead">
      <button type="submit">Acknowledge ${d.id}</button></form>`
          : ""
      }</td>`
        : ""
    }
  </tr>`,
  )}</tbody></table>`;
}

export async function deliveriesFragment(ctx: PageContext): Promise<Html> {
  const p = ctx.url.searchParams;
  const filters = readFilters(p, ctx.deps.handlers);
  const found = await ctx.deps.store.browse.browseDeliveries({ ...filters.query, repositories: ctx.scope });
  // The query selects by repository name; each row is checked by its installation too.
  const seen = found.items.filter((d) => maySee(ctx, d) && matches(filters, d));
  const decisions = await ctx.deps.store.browse.decisionsOf(seen.map((d) => d.id));
  const showAll = p.get("show") === "all";
  const hidden = showAll ? 0 : seen.filter((d) => noHandlerTook(d, decisions.get(d.id))).length;
  const page = { ...found, items: showAll ? seen : seen.filter((d) => !noHandlerTook(d, decisions.get(d.id))) };
  const older = new URLSearchParams(filterQuery(p));
  if (page.next) older.set("cursor", page.next);
  const toggle = new URLSearchParams(filterQuery(p));
  if (showAll) toggle.delete("show");
  else toggle.set("show", "all");
  const n = page.items.length;
  const counts = html`<p class="note" data-k="counts">Showing ${n} ${n === 1 ? "delivery" : "deliveries"}${page.next ? " (older ones on the next page)" : ""}.
    ${hidden ? html`${hidden} no handler took ${hidden === 1 ? "is" : "are"} hidden: <a href="/console/deliveries?${toggle.toString()}">show them</a>.` : showAll ? html`Deliveries no handler took are shown: <a href="/console/deliveries?${toggle.toString()}">hide them</a>.` : ""}</p>`;
  return html`${counts}${deliveryRows(page, { decisions })}${page.next ? html`<p><a href="/console/deliveries?${older.toString()}" rel="next">Older deliveries</a></p>` : ""}`;
}

function select(name: string, label: string, options: readonly string[], current: string | null): Html {
  const all = current && !options.includes(current) ? [current, ...options] : options;
  return html`<label>${label}<select name="${name}"><option value="">any</option>${all.map((o) => html`<option${o === current ? html` selected` : ""}>${o}</option>`)}</select></label>`;
}

/** Recent deliveries read for the event choices: the events that exist, as the list spells them. */
const EVENTS_READ = 200;

async function eventChoices(ctx: PageContext): Promise<string[]> {
  const recent = await ctx.deps.store.browse.browseDeliveries({ limit: EVENTS_READ, repositories: ctx.scope });
  const names = new Set<string>();
  for (const d of recent.items) {
    if (!maySee(ctx, d)) continue;
    names.add(d.event);
    if (d.action) names.add(`${d.event}.${d.action}`);
  }
  return [...names].sort();
}

const PRESETS: [string, number][] = [
  ["last 15 minutes", 15 * 60_000],
  ["last hour", 3_600_000],
  ["last 24 hours", 86_400_000],
  ["last 7 days", 7 * 86_400_000],
];

/** The filters in force as chips, each a link that removes it; and time presets that set `since`. */
function chipsAndPresets(p: URLSearchParams): Html {
  const active = [...filterQuery(p)];
  const without = (name: string) => {
    const q = filterQuery(p);
    q.delete(name);
    return `/console/deliveries${q.toString() ? `?${q.toString()}` : ""}`;
  };
  const since = (ms: number) => {
    const q = filterQuery(p);
    q.set("since", new Date(Date.now() - ms).toISOString().slice(0, 16));
    q.delete("until");
    return `/console/deliveries?${q.toString()}`;
  };
  return html`<nav aria-label="Received within" class="presets"><span class="note">Received within:</span> ${PRESETS.map(([label, ms], i) => html`${i ? " · " : ""}<a href="${since(ms)}">${label}</a>`)}</nav>
  ${
    active.length
      ? html`<ul class="chips" aria-label="Filters in force">${active.map(([k, v]) => html`<li><span>${k} = ${v}</span> <a href="${without(k)}" aria-label="Remove the filter ${k} = ${v}">×</a></li>`)}</ul>`
      : ""
  }`;
}

export async function deliveriesPage(ctx: PageContext): Promise<PageOut> {
  const p = ctx.url.searchParams;
  const form = html`<form class="filters" method="get" action="/console/deliveries" aria-label="Filter deliveries">
    ${select("event", "Event", await eventChoices(ctx), p.get("event"))}
    ${select("repository", "Repository", [...ctx.scope].sort(), p.get("repository"))}
    ${select("handler", "Handler", ctx.deps.handlers, p.get("handler"))}
    ${select("outcome", "Handler outcome", OUTCOMES, p.get("outcome"))}
    ${select("status", "Delivery status", DELIVERY_STATUSES, p.get("status"))}
    <label>Since (UTC)<input name="since" type="datetime-local" value="${p.get("since") ?? ""}"></label>
    <label>Until (UTC)<input name="until" type="datetime-local" value="${p.get("until") ?? ""}"></label>
    ${p.get("show") === "all" ? html`<input type="hidden" name="show" value="all">` : ""}
    <button type="submit">Filter</button> <a href="/console/deliveries">Clear</a></form>`;
  const first = !p.get("cursor");
  return {
    title: "Deliveries",
    body: html`${refusalNote(readFilters(p, ctx.deps.handlers).refused)}${form}${chipsAndPresets(p)}<div id="live">${await deliveriesFragment(ctx)}</div>`,
    ...(first ? { live: `/console/events?view=deliveries&${filterQuery(p).toString()}` } : {}),
  };
}
