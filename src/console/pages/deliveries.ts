// /console/deliveries: newest first, filtered, a page at a time; the first page updates live.
import { html, statusBadge, time, type Html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";
import { DELIVERY_STATUSES, filterQuery, matches, OUTCOMES, readFilters, refusalNote } from "./filters.js";
import type { DeliveryPage } from "../../store/browse.js";
import { maySee } from "./scope.js";

/** `replay`: each row's replay button (dead letters); `acknowledge`: and its acknowledge button. */
export function deliveryRows(
  page: DeliveryPage,
  opts: { replay?: { csrf: string }; acknowledge?: boolean } = {},
): Html {
  if (page.items.length === 0) {
    // A rare filter stops searching after a bounded stretch: say so rather than "none".
    return page.next
      ? html`<p class="note">None among the deliveries searched so far; older ones may match.</p>`
      : html`<p class="note">No deliveries match.</p>`;
  }
  return html`<table><thead><tr><th scope="col">Received</th><th scope="col">Event</th><th scope="col">Repository</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Delivery</th>${opts.replay ? html`<th scope="col">Last error</th><th scope="col">Action</th>` : ""}</tr></thead>
  <tbody>${page.items.map(
    (d) => html`<tr data-delivery="${d.id}">
    <td>${time(d.receivedAt)}</td><td>${d.event}${d.action ? `.${d.action}` : ""}</td><td>${d.repository ?? "—"}</td>
    <td>${statusBadge(d.status)}</td><td>${d.attempts}</td><td><a href="/console/deliveries/${encodeURIComponent(d.id)}">${d.id}</a></td>
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
  const filters = readFilters(ctx.url.searchParams, ctx.deps.handlers);
  const found = await ctx.deps.store.browse.browseDeliveries({ ...filters.query, repositories: ctx.scope });
  // The query selects by repository name; each row is checked by its installation too.
  const page = { ...found, items: found.items.filter((d) => maySee(ctx, d) && matches(filters, d)) };
  const older = new URLSearchParams(filterQuery(ctx.url.searchParams));
  if (page.next) older.set("cursor", page.next);
  return html`${deliveryRows(page)}${page.next ? html`<p><a href="/console/deliveries?${older.toString()}" rel="next">Older deliveries</a></p>` : ""}`;
}

function select(name: string, label: string, options: readonly string[], current: string | null): Html {
  return html`<label>${label}<select name="${name}"><option value="">any</option>${options.map((o) => html`<option${o === current ? html` selected` : ""}>${o}</option>`)}</select></label>`;
}

export async function deliveriesPage(ctx: PageContext): Promise<PageOut> {
  const p = ctx.url.searchParams;
  const form = html`<form class="filters" method="get" action="/console/deliveries" aria-label="Filter deliveries">
    <label>Event<input name="event" value="${p.get("event") ?? ""}" size="24"></label>
    ${select("repository", "Repository", [...ctx.scope].sort(), p.get("repository"))}
    ${select("handler", "Handler", ctx.deps.handlers, p.get("handler"))}
    ${select("outcome", "Handler outcome", OUTCOMES, p.get("outcome"))}
    ${select("status", "Delivery status", DELIVERY_STATUSES, p.get("status"))}
    <label>Since (UTC)<input name="since" type="datetime-local" value="${p.get("since") ?? ""}"></label>
    <label>Until (UTC)<input name="until" type="datetime-local" value="${p.get("until") ?? ""}"></label>
    <button type="submit">Filter</button> <a href="/console/deliveries">Clear</a></form>`;
  const first = !p.get("cursor");
  return {
    title: "Deliveries",
    body: html`${refusalNote(readFilters(p, ctx.deps.handlers).refused)}${form}<div id="live">${await deliveriesFragment(ctx)}</div>`,
    ...(first ? { live: `/console/events?view=deliveries&${filterQuery(p).toString()}` } : {}),
  };
}
