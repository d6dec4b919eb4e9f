// /console: what Steward is doing now, for the repositories the viewer can access.
import type { DeliveryStatus } from "../../store/records.js";
import { html, time, type Html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";
import { clusterSection } from "./cluster.js";
import { handlerSections } from "../handler-pages.js";

const WINDOW_MINUTES = 30;
const STATUSES: DeliveryStatus[] = ["done", "failed", "dead", "running", "queued"];

export async function overviewFragment(ctx: PageContext): Promise<Html> {
  const { deps, scope } = ctx;
  const since = Math.floor(Date.now() / 60_000) * 60_000 - (WINDOW_MINUTES - 1) * 60_000;
  const [activity, depth, dead, sections, cluster] = await Promise.all([
    deps.store.browse.deliveryActivity(since, scope),
    deps.depth(),
    deps.store.browse.countDead(scope),
    handlerSections(ctx),
    clusterSection(ctx),
  ]);
  const minutes = [...new Set(activity.map((a) => a.minute))].sort((a, b) => b - a);
  const count = (m: number, s: DeliveryStatus) => activity.find((a) => a.minute === m && a.status === s)?.count ?? 0;
  const budget = deps.budget
    .rows()
    .filter((r) => r.installation !== "app" && ctx.access.installations.includes(r.installation));
  return html`
  <section aria-labelledby="now"><h2 id="now">Now</h2>
    <dl><dt>Queue depth</dt><dd data-k="depth">${depth}</dd>
    <dt>Dead letters</dt><dd data-k="dead">${ctx.viewer.owner ? html`<a href="/console/dead">${dead}</a>` : dead}</dd>
    <dt>Handlers</dt><dd>${deps.handlers.map((h, i) => html`${i ? ", " : ""}${h} (started)`)}</dd></dl>
  </section>
  <section aria-labelledby="per-minute"><h2 id="per-minute">Deliveries per minute, last ${WINDOW_MINUTES} minutes</h2>
    ${
      minutes.length === 0
        ? html`<p class="note">No deliveries in the last ${WINDOW_MINUTES} minutes.</p>`
        : html`
    <table><thead><tr><th scope="col">Minute</th>${STATUSES.map((s) => html`<th scope="col">${s}</th>`)}</tr></thead>
    <tbody>${minutes.map((m) => html`<tr><th scope="row">${time(m)}</th>${STATUSES.map((s) => html`<td>${count(m, s)}</td>`)}</tr>`)}</tbody></table>`
    }
  </section>
  <section aria-labelledby="budget"><h2 id="budget">API rate-limit budget per installation</h2>
    ${
      budget.length === 0
        ? html`<p class="note">No API calls seen yet.</p>`
        : html`
    <table><thead><tr><th scope="col">Installation</th><th scope="col">Remaining</th><th scope="col">As of</th></tr></thead>
    <tbody>${budget.map((b) => html`<tr><td>${b.installation}</td><td>${b.remaining}</td><td>${time(b.at)}</td></tr>`)}</tbody></table>`
    }
  </section>
  ${sections}
  ${cluster}`;
}

export async function overviewPage(ctx: PageContext): Promise<PageOut> {
  return {
    title: "Overview",
    body: html`<p class="note">Repositories you can see: ${ctx.scope.length}. <a href="/console/deliveries">All deliveries</a>.</p><div id="live">${await overviewFragment(ctx)}</div>`,
    live: "/console/events?view=overview",
  };
}
