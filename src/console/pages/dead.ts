// /console/dead (owners): dead letters of the owner's organisations; replay one, or every
// one matching the filter (bounded per request).
import { html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";
import { deliveryRows } from "./deliveries.js";
import { filterQuery, filtersOf } from "./filters.js";
import { ownsRepository } from "./scope.js";

/** Replays one request may start at most: a bigger backlog takes several clicks, not one unbounded loop. */
const MAX_REPLAY = 1_000;

/** Repositories of organisations the viewer owns: dead letters and replay are theirs. */
function ownedScope(ctx: PageContext): string[] {
  return ctx.scope.filter((r) => ownsRepository(ctx, r));
}

export async function deadPage(ctx: PageContext): Promise<PageOut> {
  const p = ctx.url.searchParams;
  const filters = filtersOf(p, ctx.deps.handlers);
  const page = await ctx.deps.store.browse.browseDeliveries({ ...filters, status: "dead", repositories: ownedScope(ctx) });
  const older = filterQuery(p);
  if (page.next) older.set("cursor", page.next);
  const done = p.get("replayed");
  return {
    title: "Dead letters",
    body: html`
    ${done !== null ? html`<p role="status">Queued again: ${done} ${done === "1" ? "delivery" : "deliveries"}.</p>` : ""}
    <form class="filters" method="get" action="/console/dead" aria-label="Filter dead letters">
      <label>Event<input name="event" value="${p.get("event") ?? ""}" size="18"></label>
      <label>Repository<input name="repository" value="${p.get("repository") ?? ""}" size="24"></label>
      <button type="submit">Filter</button></form>
    ${deliveryRows(page, { replay: { csrf: ctx.viewer.csrf } })}
    ${page.next ? html`<p><a href="/console/dead?${older.toString()}" rel="next">Older dead letters</a></p>` : ""}
    ${page.items.length ? html`<form method="post" action="/console/dead/replay">
      <input type="hidden" name="csrf" value="${ctx.viewer.csrf}">
      ${[...filterQuery(p)].map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
      <button type="submit">Replay all dead letters matching this filter</button></form>` : ""}`,
  };
}

/** Runs a replay form; returns where to go next. Only deliveries of organisations the viewer owns. */
export async function replayAction(ctx: PageContext, form: URLSearchParams): Promise<string> {
  const path = ctx.url.pathname;
  const one = /^\/console\/deliveries\/([^/]+)\/replay$/.exec(path);
  const back = form.get("back");
  if (one) {
    const id = decodeURIComponent(one[1]!);
    const found = await ctx.deps.store.deliveries.getDelivery(id);
    const allowed = found && (found.delivery.repository !== undefined ? ownsRepository(ctx, found.delivery.repository) : ctx.viewer.owner && found.delivery.installationId !== undefined && ctx.access.installations.includes(found.delivery.installationId));
    let count = 0;
    if (allowed) {
      try {
        await ctx.deps.replay(id);
        count = 1;
      } catch {
        count = 0;
      }
    }
    const target = back === "/console/dead" ? "/console/dead" : `/console/deliveries/${encodeURIComponent(id)}`;
    return `${target}${target.includes("?") ? "&" : "?"}replayed=${count}`;
  }
  const filters = filtersOf(form, ctx.deps.handlers);
  let count = 0;
  let cursor: string | undefined;
  const seen = new Set<string>();
  do {
    const page = await ctx.deps.store.browse.browseDeliveries({ ...filters, ...(cursor ? { cursor } : {}), status: "dead", repositories: ownedScope(ctx), limit: 200 });
    for (const d of page.items) {
      if (count >= MAX_REPLAY || seen.has(d.id)) continue;
      seen.add(d.id);
      try {
        await ctx.deps.replay(d.id);
        count++;
      } catch {
        // running meanwhile, or gone: not replayed, the count says so
      }
    }
    cursor = page.next;
  } while (cursor && count < MAX_REPLAY);
  const q = filterQuery(form);
  q.set("replayed", String(count));
  return `/console/dead?${q.toString()}`;
}
