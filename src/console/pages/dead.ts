// /console/dead (owners): dead letters of the owner's organisations; replay one, or every
// one matching the filter (bounded per request).
import { html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";
import { deliveryRows } from "./deliveries.js";
import { filterQuery, filtersOf } from "./filters.js";
import { mayAct, ownedScope } from "./scope.js";

/** Replays one request may start at most: a bigger backlog takes several clicks, not one unbounded loop. */
const MAX_REPLAY = 1_000;

export async function deadPage(ctx: PageContext): Promise<PageOut> {
  const p = ctx.url.searchParams;
  const filters = filtersOf(p, ctx.deps.handlers);
  const found = await ctx.deps.store.browse.browseDeliveries({
    ...filters,
    status: "dead",
    repositories: ownedScope(ctx),
  });
  // The repository names the installation; a row recorded under another installation is not shown.
  const page = { ...found, items: found.items.filter((d) => mayAct(ctx, d)) };
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
    ${
      page.items.length
        ? html`<form method="post" action="/console/dead/replay">
      <input type="hidden" name="csrf" value="${ctx.viewer.csrf}">
      ${[...filterQuery(p)].map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
      <button type="submit">Replay all dead letters matching this filter</button></form>`
        : ""
    }`,
  };
}

/**
 * Runs a replay form; returns where to go next, or undefined when the viewer may not replay the
 * delivery named (unknown ones alike: the answer does not tell whether it exists). Only deliveries
 * of installations whose account the viewer owns, each checked by its installation and repository.
 */
export async function replayAction(ctx: PageContext, form: URLSearchParams): Promise<string | undefined> {
  const back = form.get("back");
  if (ctx.segments[0] === "deliveries") {
    const id = ctx.segments[1]!;
    const found = await ctx.deps.store.deliveries.getDelivery(id);
    if (!found || !mayAct(ctx, found.delivery)) return undefined;
    let count = 0;
    try {
      await ctx.deps.replay(id);
      count = 1;
    } catch {
      count = 0;
    }
    const target = back === "/console/dead" ? "/console/dead" : `/console/deliveries/${encodeURIComponent(id)}`;
    return `${target}${target.includes("?") ? "&" : "?"}replayed=${count}`;
  }
  const filters = filtersOf(form, ctx.deps.handlers);
  let count = 0;
  let cursor: string | undefined;
  const seen = new Set<string>();
  do {
    const page = await ctx.deps.store.browse.browseDeliveries({
      ...filters,
      ...(cursor ? { cursor } : {}),
      status: "dead",
      repositories: ownedScope(ctx),
      limit: 200,
    });
    for (const d of page.items) {
      if (count >= MAX_REPLAY || seen.has(d.id) || !mayAct(ctx, d)) continue;
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
