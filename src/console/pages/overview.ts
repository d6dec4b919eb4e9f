// /console: what Steward is doing now, for the repositories the viewer can access. Every figure
// is read from a record: the store's deliveries, the engine's record of each handler's start,
// what the API client saw of the rate limits.
import { html, time, type Html, type PageOut } from "../html.js";
import type { HandlerStartView, PageContext } from "../types.js";
import { clusterSection } from "./cluster.js";
import { handlerSections } from "../handler-pages.js";
import { pausedSection } from "./pauses.js";
import { percentileBound, readTiming, type TimingSummary } from "../../ops/timing.js";
import { countAcknowledged } from "../actions.js";
import { readBudget } from "../budget.js";

const WINDOW_MINUTES = 30;
/** Retrying deliveries counted at most (one page of the store); more reads as "N or more". */
const RETRYING_COUNTED = 200;

/**
 * Deliveries received per minute, every minute of the window (empty ones as 0). Received is a
 * fact of its minute: counting by what became of them later would change the past.
 */
export function receivedPerMinute(
  activity: readonly { minute: number; count: number }[],
  since: number,
  minutes: number,
): { minute: number; count: number }[] {
  const counts = new Map<number, number>();
  for (const a of activity) counts.set(a.minute, (counts.get(a.minute) ?? 0) + a.count);
  return Array.from({ length: minutes }, (_, i) => {
    const minute = since + i * 60_000;
    return { minute, count: counts.get(minute) ?? 0 };
  });
}

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** An inline bar chart (no script, no library): one bar per minute, its count in its title. */
function chart(rows: readonly { minute: number; count: number }[]): Html {
  const W = 600;
  const H = 120;
  const top = Math.max(1, ...rows.map((r) => r.count));
  const slot = W / rows.length;
  const total = rows.reduce((n, r) => n + r.count, 0);
  const busiest = rows.reduce((a, r) => (r.count > a.count ? r : a), rows[0]!);
  return html`<figure class="chart"><svg viewBox="0 0 ${W} ${H + 16}" width="100%" role="img" aria-labelledby="per-minute-desc" preserveAspectRatio="none">
    <desc id="per-minute-desc">${total} deliveries received in the last ${rows.length} minutes${total ? `, at most ${busiest.count} in the minute from ${hhmm(busiest.minute)} UTC` : ""}.</desc>
    <line x1="0" y1="${H}" x2="${W}" y2="${H}" stroke="#8c959f" stroke-width="1"/>
    ${rows.map((r, i) => {
      const h = Math.round((r.count / top) * (H - 4));
      return html`<rect data-minute="${r.minute}" data-count="${r.count}" x="${(i * slot + 1).toFixed(1)}" y="${H - h}" width="${(slot - 2).toFixed(1)}" height="${h}" fill="#0969da"><title>${hhmm(r.minute)} UTC: ${r.count}</title></rect>`;
    })}
    <text x="0" y="${H + 13}" font-size="11" fill="#59636e">${hhmm(rows[0]!.minute)}</text>
    <text x="${W}" y="${H + 13}" font-size="11" fill="#59636e" text-anchor="end">${hhmm(rows[rows.length - 1]!.minute)} UTC</text>
  </svg><figcaption class="note">Busiest minute: ${total === 0 ? "none" : `${busiest.count} at ${hhmm(busiest.minute)} UTC`}. Each bar is one minute; empty minutes are 0.</figcaption></figure>`;
}

/** "0.4 s", "12 s", "3.5 min", "2.1 h". */
function seconds(s: number): string {
  if (s < 10) return `${Math.round(s * 10) / 10} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 6) / 10} min`;
  return `${Math.round(s / 360) / 10} h`;
}

/** A percentile from the kept buckets reads as "at most" its bucket's bound. */
function atMost(summary: TimingSummary, fraction: number): string {
  const bound = percentileBound(summary, fraction);
  return Number.isFinite(bound) ? `≤ ${seconds(bound)}` : "> 2 h";
}

function timingRow(label: string, key: string, t: TimingSummary): Html {
  return html`<tr data-timing="${key}"><th scope="row">${label}</th><td>${t.count}</td>${
    t.count === 0
      ? html`<td colspan="3" class="note">none recorded</td>`
      : html`<td>${atMost(t, 0.5)}</td><td>${atMost(t, 0.95)}</td><td>${seconds(t.max)}</td>`
  }</tr>`;
}

function startCell(s: HandlerStartView): Html {
  const cls = s.state === "started" ? "done" : s.state === "retrying" || s.state === "stopped" ? "failed" : "queued";
  return html`<span class="st st-${cls}">${s.state}</span>`;
}

function handlersSection(ctx: PageContext): Html {
  const starts = ctx.deps.handlerStarts?.();
  if (!starts) {
    return html`<p class="note">Handlers: ${ctx.deps.handlers.join(", ")} (their start state is not recorded in this process).</p>`;
  }
  return html`<section aria-labelledby="handler-starts"><h2 id="handler-starts">Handlers</h2>
    <table><thead><tr><th scope="col">Handler</th><th scope="col">Start</th><th scope="col">Start attempts</th><th scope="col">Last start error</th></tr></thead>
    <tbody>${starts.map((s) => html`<tr data-handler="${s.handler}"><th scope="row">${s.handler}</th><td data-k="start">${startCell(s)}</td><td>${s.state === "no start step" ? "—" : s.attempts}</td><td>${s.lastError ? html`<code>${s.lastError}</code>` : "none"}</td></tr>`)}</tbody></table>
  </section>`;
}

export async function overviewFragment(ctx: PageContext): Promise<Html> {
  const { deps, scope } = ctx;
  const since = Math.floor(Date.now() / 60_000) * 60_000 - (WINDOW_MINUTES - 1) * 60_000;
  const [activity, depth, dead, acknowledged, latest, retrying, sections, cluster, paused, timing, oldestDue, seen] =
    await Promise.all([
      deps.store.browse.deliveryActivity(since, scope),
      deps.depth(),
      deps.store.browse.countDead(scope),
      countAcknowledged(deps.store, scope),
      deps.store.browse.browseDeliveries({ limit: 1, repositories: scope }),
      deps.store.browse.browseDeliveries({ limit: RETRYING_COUNTED, status: "failed", repositories: scope }),
      handlerSections(ctx),
      clusterSection(ctx),
      pausedSection(ctx),
      readTiming(deps.store.kv, since),
      deps.store.deliveries.oldestDueAt(),
      readBudget(deps.store.kv, deps.budget),
    ]);
  const rows = receivedPerMinute(activity, since, WINDOW_MINUTES);
  const last = latest.items[0];
  const retryingCount = `${retrying.items.length}${retrying.next ? " or more" : ""}`;
  // Acknowledged dead letters were left dead on purpose: counted apart, not as needing attention.
  const unacknowledged = Math.max(0, dead - acknowledged.count);
  const deadCount = `${acknowledged.more ? "at most " : ""}${unacknowledged}`;
  const budget = seen
    .sort((a, b) => String(a.installation).localeCompare(String(b.installation), "en", { numeric: true }))
    .filter((r) => r.installation !== "app" && ctx.access.installations.includes(r.installation));
  return html`
  <section aria-labelledby="now"><h2 id="now">Now</h2>
    <dl><dt>Last delivery received</dt><dd data-k="last">${last ? html`${time(last.receivedAt)}: <a href="/console/deliveries/${encodeURIComponent(last.id)}">${last.event}${last.action ? `.${last.action}` : ""}</a> ${last.repository ?? ""}` : "none recorded"}</dd>
    <dt>Queue depth</dt><dd data-k="depth">${depth}</dd>
    <dt>Retrying</dt><dd data-k="retrying">${retrying.items.length ? html`<a href="/console/deliveries?status=failed">${retryingCount}</a>` : "0"}</dd>
    <dt>Dead letters</dt><dd data-k="dead">${ctx.viewer.owner ? html`<a href="/console/dead">${deadCount}</a>` : deadCount}${acknowledged.count ? html` <span data-k="acknowledged">(and ${acknowledged.count}${acknowledged.more ? " or more" : ""} acknowledged: left dead on purpose)</span>` : ""}</dd>
    <dt>Oldest queued delivery</dt><dd data-k="oldest">${oldestDue && oldestDue.getTime() <= Date.now() ? html`due ${seconds((Date.now() - oldestDue.getTime()) / 1000)} ago, not yet claimed` : "none waiting"}</dd></dl>
  </section>
  <section aria-labelledby="timing"><h2 id="timing">Delivery lag and queue time, last ${WINDOW_MINUTES} minutes</h2>
    <p class="note">Every replica's deliveries. Lag is GitHub's delay: from the time the payload gives for its event to Steward's receipt. Queue time is Steward's: from due (received, retry time, replayed) to claimed by a worker.</p>
    <table><thead><tr><th scope="col"></th><th scope="col">Deliveries</th><th scope="col">Median</th><th scope="col">95th percentile</th><th scope="col">Longest</th></tr></thead>
    <tbody>${timingRow("GitHub to Steward (lag)", "lag", timing.lag)}${timingRow("Queued (due to claimed)", "queue", timing.queue)}</tbody></table>
  </section>
  ${paused}
  ${handlersSection(ctx)}
  <section aria-labelledby="per-minute"><h2 id="per-minute">Deliveries received per minute, last ${WINDOW_MINUTES} minutes</h2>
    ${chart(rows)}
  </section>
  <section aria-labelledby="budget"><h2 id="budget">API rate-limit budget per installation</h2>
    <p class="note">Every replica's view: for each installation, the newest answer any of them had from GitHub (each writes what it saw every few seconds).</p>
    ${
      budget.length === 0
        ? html`<p class="note">No API calls seen yet.</p>`
        : html`
    <table><thead><tr><th scope="col">Installation</th><th scope="col">Remaining</th><th scope="col">Of</th><th scope="col">Resets</th><th scope="col">As of</th></tr></thead>
    <tbody>${budget.map((b) => html`<tr data-installation="${b.installation}"><td>${b.installation}</td><td>${b.remaining}</td><td>${b.limit ?? "not said"}</td><td>${b.resetAt !== undefined ? time(new Date(b.resetAt)) : "not said"}</td><td>${time(b.at)}</td></tr>`)}</tbody></table>`
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
