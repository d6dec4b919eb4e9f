// /console/dead (owners): dead letters of the owner's organisations; replay one, or every one
// matching the filter shown, or acknowledge one that must not run. "Replay all" first shows what it
// would replay (the count, the filter and the deliveries) and runs only on a confirmation of exactly
// that set: a filter the page cannot apply is refused, a set that changed in between is shown again
// instead of replayed, and acknowledged dead letters are left out (and said to be).
import { createHash } from "node:crypto";
import { html, time, type Html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";
import type { DeliverySummary } from "../../store/browse.js";
import { acknowledge, acknowledgementOf, MAX_REASON_CHARS, recordAction, type Acknowledgement } from "../actions.js";
import { deliveryRows } from "./deliveries.js";
import { describeFilters, filterQuery, matches, readFilters, refusalNote } from "./filters.js";
import { mayAct, ownedScope } from "./scope.js";

/** Replays one confirmation may start at most: a bigger backlog takes several, not one unbounded loop. */
export const MAX_REPLAY = 1_000;
/** Deliveries a confirmation names one by one; the rest are counted. */
const NAMED_IN_CONFIRMATION = 25;

/** Each dead letter with the acknowledgement that stands for it, if any. */
async function withAcknowledgements(
  ctx: PageContext,
  items: readonly DeliverySummary[],
): Promise<{ d: DeliverySummary; ack: Acknowledgement | undefined }[]> {
  return Promise.all(items.map(async (d) => ({ d, ack: await acknowledgementOf(ctx.deps.store, d) })));
}

function acknowledgedTable(ctx: PageContext, rows: { d: DeliverySummary; ack: Acknowledgement }[]): Html {
  if (rows.length === 0) return html``;
  return html`<section aria-labelledby="acknowledged"><h2 id="acknowledged">Acknowledged: left dead on purpose</h2>
    <p class="note">These do not run again unless someone replays one of them by itself; "replay all" leaves them out.</p>
    <table><thead><tr><th scope="col">Received</th><th scope="col">Event</th><th scope="col">Repository</th><th scope="col">Delivery</th><th scope="col">Acknowledged</th><th scope="col">Reason</th><th scope="col">Action</th></tr></thead>
    <tbody>${rows.map(
      ({
        d,
        ack,
      }) => html`<tr data-delivery="${d.id}" data-acknowledged><td>${time(d.receivedAt)}</td><td>${d.event}${d.action ? `.${d.action}` : ""}</td><td>${d.repository ?? "—"}</td>
      <td><a href="/console/deliveries/${encodeURIComponent(d.id)}">${d.id}</a></td><td>by <strong>${ack.login}</strong> ${time(ack.at)}</td><td>${ack.reason ?? ""}</td>
      <td><form method="post" action="/console/deliveries/${encodeURIComponent(d.id)}/replay"><input type="hidden" name="csrf" value="${ctx.viewer.csrf}"><input type="hidden" name="back" value="/console/dead"><button type="submit">Replay ${d.id}</button></form></td></tr>`,
    )}</tbody></table></section>`;
}

export async function deadPage(ctx: PageContext): Promise<PageOut> {
  const p = ctx.url.searchParams;
  const filters = readFilters(p, ctx.deps.handlers);
  const found = await ctx.deps.store.browse.browseDeliveries({
    ...filters.query,
    status: "dead",
    repositories: ownedScope(ctx),
  });
  // The repository names the installation; a row recorded under another installation is not shown.
  const shown = await withAcknowledgements(
    ctx,
    found.items.filter((d) => mayAct(ctx, d) && matches(filters, d)),
  );
  const page = { ...found, items: shown.filter((r) => !r.ack).map((r) => r.d) };
  const acknowledged = shown.filter((r): r is { d: DeliverySummary; ack: Acknowledgement } => r.ack !== undefined);
  const older = filterQuery(p);
  if (page.next) older.set("cursor", page.next);
  const done = p.get("replayed");
  const doneCount = done !== null && /^\d{1,6}$/.test(done) ? Number(done) : undefined;
  return {
    title: "Dead letters",
    body: html`
    ${doneCount !== undefined ? html`<p role="status">Queued again: ${doneCount} ${doneCount === 1 ? "delivery" : "deliveries"}.</p>` : ""}
    ${p.get("acknowledged") === "1" ? html`<p role="status">Acknowledged: it stays dead and "replay all" leaves it out.</p>` : ""}
    ${refusalNote(filters.refused)}
    <form class="filters" method="get" action="/console/dead" aria-label="Filter dead letters">
      <label>Event<input name="event" value="${p.get("event") ?? ""}" size="24"></label>
      <label>Repository<input name="repository" value="${p.get("repository") ?? ""}" size="24"></label>
      <button type="submit">Filter</button></form>
    ${deliveryRows(page, { replay: { csrf: ctx.viewer.csrf }, acknowledge: true })}
    ${acknowledgedTable(ctx, acknowledged)}
    ${page.next ? html`<p><a href="/console/dead?${older.toString()}" rel="next">Older dead letters</a></p>` : ""}
    ${
      page.items.length && filters.refused.length === 0
        ? html`<form method="post" action="/console/dead/replay">
      <input type="hidden" name="csrf" value="${ctx.viewer.csrf}">
      ${[...filterQuery(p)].map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
      <button type="submit">Replay all dead letters matching this filter…</button>
      <span class="note">(${describeFilters(p)}; the next page shows how many and asks you to confirm)</span></form>`
        : ""
    }`,
  };
}

/**
 * Every dead letter the viewer may replay that matches the filters and was not acknowledged, newest
 * first, at most MAX_REPLAY (+1 to tell there are more), and how many acknowledged ones were left out.
 */
async function matching(
  ctx: PageContext,
  form: URLSearchParams,
): Promise<{ items: DeliverySummary[]; acknowledged: number }> {
  const filters = readFilters(form, ctx.deps.handlers);
  const out: DeliverySummary[] = [];
  const seen = new Set<string>();
  let acknowledged = 0;
  let cursor: string | undefined;
  do {
    const page = await ctx.deps.store.browse.browseDeliveries({
      ...filters.query,
      ...(cursor ? { cursor } : {}),
      status: "dead",
      repositories: ownedScope(ctx),
      limit: 200,
    });
    const candidates = page.items.filter((d) => !seen.has(d.id) && mayAct(ctx, d) && matches(filters, d));
    for (const { d, ack } of await withAcknowledgements(ctx, candidates)) {
      seen.add(d.id);
      if (ack) {
        acknowledged++;
        continue;
      }
      out.push(d);
      if (out.length > MAX_REPLAY) return { items: out, acknowledged };
    }
    cursor = page.next;
  } while (cursor);
  return { items: out, acknowledged };
}

/** What a confirmation names: the exact deliveries, so a changed set is never replayed unseen. */
function digestOf(items: readonly DeliverySummary[]): string {
  const h = createHash("sha256");
  for (const id of items.map((d) => d.id).sort()) h.update(`${id}\n`);
  return h.digest("base64url").slice(0, 32);
}

export type ActionResult = { redirect: string } | { page: PageOut };

function confirmation(
  ctx: PageContext,
  form: URLSearchParams,
  items: readonly DeliverySummary[],
  more: boolean,
  changed: boolean,
  acknowledged: number,
): PageOut {
  const filter = describeFilters(form);
  const back = `/console/dead?${filterQuery(form).toString()}`;
  const leftOut = acknowledged
    ? html`<p class="note" data-k="acknowledged">Left out: ${acknowledged} acknowledged ${acknowledged === 1 ? "dead letter" : "dead letters"} matching the filter (acknowledged ones are replayed only one by one).</p>`
    : "";
  if (items.length === 0) {
    return {
      title: "Nothing to replay",
      body: html`${changed ? html`<p role="alert">The matching dead letters changed since you confirmed: nothing was replayed.</p>` : ""}
      <p>No dead letter you may replay matches <strong>${filter}</strong>. Nothing was replayed.</p>${leftOut}<p><a href="${back}">Back to the dead letters</a></p>`,
    };
  }
  const n = items.length;
  const noun = n === 1 ? "dead letter" : "dead letters";
  return {
    title: "Confirm the replay",
    body: html`
    ${changed ? html`<p role="alert">The matching dead letters changed since you confirmed: nothing was replayed yet. Check the list again.</p>` : ""}
    <p>Replay <strong data-k="count">${n}</strong> ${noun} matching <strong data-k="filter">${filter}</strong>${more ? html` (the newest ${MAX_REPLAY}; more match, replay them afterwards)` : ""}:</p>
    <ul>${items.slice(0, NAMED_IN_CONFIRMATION).map((d) => html`<li><a href="/console/deliveries/${encodeURIComponent(d.id)}">${d.id}</a> ${d.event}${d.action ? `.${d.action}` : ""} ${d.repository ?? ""}</li>`)}</ul>
    ${n > NAMED_IN_CONFIRMATION ? html`<p class="note">and ${n - NAMED_IN_CONFIRMATION} more.</p>` : ""}
    ${leftOut}
    <form method="post" action="/console/dead/replay">
      <input type="hidden" name="csrf" value="${ctx.viewer.csrf}">
      ${[...filterQuery(form)].map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
      <input type="hidden" name="confirmed" value="${digestOf(items)}">
      <button type="submit">Replay these ${n} ${noun}</button> <a href="${back}">Cancel</a></form>`,
  };
}

async function replayOne(ctx: PageContext, id: string, note?: string): Promise<boolean> {
  let ok = false;
  let why: string | undefined;
  try {
    await ctx.deps.replay(id);
    ok = true;
  } catch (error) {
    // running meanwhile, or gone: not replayed, and the record says so
    why = error instanceof Error ? error.message.slice(0, 200) : "not replayed";
  }
  await recordAction(ctx.deps.store, id, {
    action: "replay",
    login: ctx.viewer.login,
    at: Date.now(),
    ok,
    ...(note || why ? { note: [note, why].filter(Boolean).join(": ") } : {}),
  });
  return ok;
}

/**
 * Runs a replay form; returns where to go next or a page to show, or undefined when the viewer may
 * not replay the delivery named (unknown ones alike: the answer does not tell whether it exists).
 * Only deliveries of installations whose account the viewer owns, each checked by its installation and repository.
 */
export async function replayAction(ctx: PageContext, form: URLSearchParams): Promise<ActionResult | undefined> {
  const back = form.get("back");
  if (ctx.segments[0] === "deliveries") {
    const id = ctx.segments[1]!;
    const found = await ctx.deps.store.deliveries.getDelivery(id);
    if (!found || !mayAct(ctx, found.delivery)) return undefined;
    const count = (await replayOne(ctx, id)) ? 1 : 0;
    const target = back === "/console/dead" ? "/console/dead" : `/console/deliveries/${encodeURIComponent(id)}`;
    return { redirect: `${target}?replayed=${count}` };
  }
  const filters = readFilters(form, ctx.deps.handlers);
  if (filters.refused.length) {
    return {
      page: {
        status: 400,
        title: "Filter refused",
        body: html`${refusalNote(filters.refused)}<p>Nothing was replayed: the filter shown cannot be applied as written.</p>
        <p><a href="/console/dead">Back to the dead letters</a></p>`,
      },
    };
  }
  const found = await matching(ctx, form);
  const more = found.items.length > MAX_REPLAY;
  const items = found.items.slice(0, MAX_REPLAY);
  const confirmed = form.get("confirmed");
  if (!confirmed || confirmed !== digestOf(items)) {
    return {
      page: confirmation(ctx, form, items, more, confirmed !== null && confirmed !== "", found.acknowledged),
    };
  }
  let count = 0;
  for (const d of items) if (await replayOne(ctx, d.id, "replay of all matching dead letters")) count++;
  const q = filterQuery(form);
  q.set("replayed", String(count));
  return { redirect: `/console/dead?${q.toString()}` };
}

/**
 * Acknowledges a dead letter that must not run (owners of its installation's account, like replay):
 * recorded with who, when and why; undefined when the viewer may not act on the delivery named.
 */
export async function acknowledgeAction(ctx: PageContext, form: URLSearchParams): Promise<ActionResult | undefined> {
  const id = ctx.segments[1]!;
  const found = await ctx.deps.store.deliveries.getDelivery(id);
  if (!found || !mayAct(ctx, found.delivery)) return undefined;
  const d = found.delivery;
  if (d.status !== "dead") {
    return {
      page: {
        status: 409,
        title: "Not a dead letter",
        body: html`<p>Only a dead letter is acknowledged; delivery <code>${id}</code> is ${d.status}. Nothing was recorded.</p>
        <p><a href="/console/deliveries/${encodeURIComponent(id)}">Back to the delivery</a></p>`,
      },
    };
  }
  const reason = (form.get("reason") ?? "").replace(/\s+/g, " ").trim().slice(0, MAX_REASON_CHARS);
  await acknowledge(ctx.deps.store, id, {
    login: ctx.viewer.login,
    at: Math.max(Date.now(), d.updatedAt.getTime()),
    ...(reason ? { reason } : {}),
  });
  const target =
    form.get("back") === "/console/dead" ? "/console/dead" : `/console/deliveries/${encodeURIComponent(id)}`;
  return { redirect: `${target}?acknowledged=1` };
}
