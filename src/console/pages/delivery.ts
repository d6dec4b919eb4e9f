// /console/deliveries/{id}: one delivery: headers (never a signature), each handler's outcome
// with its decision and reasons, the API calls each handler run made, attempts and the last
// error, the payload on request.
import { html, statusBadge, time, type Html, type PageOut } from "../html.js";
import { storedApiCalls, type HandlerRunCalls } from "../../engine/api-calls.js";
import type { PageContext } from "../types.js";
import type { AttemptRecord, HandlerOutcomeRecord, StoredDelivery } from "../../store/records.js";
import { acknowledgementOf, actionsOf, MAX_REASON_CHARS, type ActionRecord } from "../actions.js";
import { handlerContext } from "../handler-pages.js";
import { markdownInline } from "../markdown.js";
import { mayAct, maySee } from "./scope.js";
import { deliveryTraceIds, tracingExported } from "../../log/trace.js";

// Signatures are dropped when stored; anything credential-like is also never shown.
const hiddenHeaders = /signature|authorization|cookie|token|secret/i;
/** A payload larger than this is shown cut (the page must stay readable and bounded). */
const MAX_PAYLOAD_SHOWN = 512 * 1024;

function prettyPayload(payload: string): string {
  let text = payload;
  try {
    text = JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    // a form-encoded or damaged payload is shown as it came
  }
  return text.length > MAX_PAYLOAD_SHOWN
    ? `${text.slice(0, MAX_PAYLOAD_SHOWN)}\n… (cut at ${MAX_PAYLOAD_SHOWN} characters)`
    : text;
}

function apiCallsSection(runs: HandlerRunCalls[]): Html {
  return html`<section aria-labelledby="api-calls"><h2 id="api-calls">API calls per handler run</h2>
    ${
      runs.length === 0
        ? html`<p class="note">No handler run of it called the API (or the record has expired).</p>`
        : runs.map(
            (
              r,
            ) => html`<table><caption>${r.handler}, attempt ${r.attempt}, started ${time(new Date(r.at))}${r.dropped > 0 ? html` <span class="note">(${r.dropped} earlier calls not kept)</span>` : ""}</caption>
      <thead><tr><th scope="col">Method</th><th scope="col">Route</th><th scope="col">Status</th><th scope="col">Duration (ms)</th></tr></thead>
      <tbody>${r.calls.map((c) => html`<tr><td>${c.method}</td><td><code>${c.route}</code></td><td>${c.status === 0 ? "no response" : c.status}</td><td>${c.ms}</td></tr>`)}</tbody></table>`,
          )
    }
    </section>`;
}

/**
 * What becomes of a failed handler run, from the delivery's own state: only a delivery waiting for
 * its retry will be retried; a dead letter runs again only when someone replays it.
 */
function failedNote(d: StoredDelivery, o: HandlerOutcomeRecord): string {
  if (d.status === "dead") return "dead letter: not retried; it runs again only if replayed";
  if (d.status === "failed") return o.retryable ? `retry due ${d.nextRunAt.toISOString()}` : "not retryable";
  if (d.status === "queued" || d.status === "running") return "running again now";
  return o.retryable ? "retryable" : "not retryable";
}

type Json = Record<string, any>;
const webUrl = (u: unknown) => (typeof u === "string" && /^https?:\/\//.test(u) ? u : undefined);

/** Where the delivery's subjects are on GitHub: the payload's own html_urls (so an Enterprise Server's are its own). */
export function linksOut(payload: unknown): { label: string; url: string }[] {
  const p = (payload && typeof payload === "object" ? payload : {}) as Json;
  const out: { label: string; url: string }[] = [];
  const add = (label: string, url: unknown) => {
    const u = webUrl(url);
    if (u && !out.some((o) => o.url === u)) out.push({ label, url: u });
  };
  const repoUrl = webUrl(p.repository?.html_url);
  if (p.check_run) add(`check run ${String(p.check_run.name ?? "")}`.trim(), p.check_run.html_url);
  if (p.pull_request) add(`pull request #${String(p.pull_request.number ?? "")}`, p.pull_request.html_url);
  if (p.workflow_run) {
    add(
      `workflow run ${String(p.workflow_run.name ?? "")}, attempt ${String(p.workflow_run.run_attempt ?? 1)}`,
      p.workflow_run.html_url,
    );
    const prs: unknown[] = Array.isArray(p.workflow_run.pull_requests) ? p.workflow_run.pull_requests : [];
    for (const pr of prs) {
      const n = (pr as Json | null)?.number;
      if (repoUrl && typeof n === "number") add(`pull request #${n}`, `${repoUrl}/pull/${n}`);
    }
  }
  if (p.workflow_job) add(`job ${String(p.workflow_job.name ?? "")}`.trim(), p.workflow_job.html_url);
  if (p.issue && !p.pull_request) add(`issue #${String(p.issue.number ?? "")}`, p.issue.html_url);
  const sha: unknown = p.workflow_run?.head_sha ?? p.pull_request?.head?.sha ?? p.check_run?.head_sha ?? p.after;
  if (webUrl(p.head_commit?.url)) add(`commit ${String(p.head_commit.id ?? "").slice(0, 7)}`, p.head_commit.url);
  else if (repoUrl && typeof sha === "string" && /^[0-9a-f]{7,40}$/.test(sha) && !/^0+$/.test(sha))
    add(`commit ${sha.slice(0, 7)}`, `${repoUrl}/commit/${sha}`);
  add("repository", repoUrl);
  return out;
}

function parsed(payload: string): unknown {
  try {
    return JSON.parse(payload);
  } catch {
    return undefined;
  }
}

/** Each handler's own explanation of its decision on the delivery (what its check run says). */
async function explanations(ctx: PageContext, d: StoredDelivery, payload: unknown): Promise<Html> {
  const explainers = (ctx.deps.handlerConsoles ?? []).filter((c) => c.console.explain);
  const parts = await Promise.all(
    explainers.map(async (c) => {
      try {
        const body = await c.console.explain!(handlerContext(ctx, c.handler), {
          id: d.id,
          event: d.event,
          action: d.action,
          repository: d.repository,
          payload,
        });
        return body
          ? html`<section aria-labelledby="explain-${c.handler}" class="explain"><h3 id="explain-${c.handler}">${c.handler}</h3>${body}</section>`
          : undefined;
      } catch {
        return html`<p class="note">${c.handler}: its record of the decision could not be read now.</p>`;
      }
    }),
  );
  const shown = parts.filter((x): x is Html => x !== undefined);
  return shown.length
    ? html`<section aria-labelledby="explanations"><h2 id="explanations">Explanation</h2>${shown}</section>`
    : html``;
}

/** Every handler run and every action people took on the delivery, in the order they happened. */
function historySection(attempts: readonly AttemptRecord[], actions: readonly ActionRecord[]): Html {
  const rows = [
    ...attempts.map((a) => ({
      at: a.at.getTime(),
      row: html`<tr data-kind="attempt"><td>${time(a.at)}</td><td>${a.handler}, attempt ${a.attempt}</td><td>${statusBadge(a.status)}</td><td>${a.detail ?? ""}</td></tr>`,
    })),
    ...actions.map((a) => ({
      at: a.at,
      row: html`<tr data-kind="action"><td>${time(a.at)}</td><td>${a.action === "replay" ? "replayed" : "acknowledged"} by <strong>${a.login}</strong></td><td>${a.ok ? "done" : "not done"}</td><td>${a.note ?? ""}</td></tr>`,
    })),
  ].sort((x, y) => x.at - y.at);
  return html`<section aria-labelledby="history"><h2 id="history">History: attempts and actions</h2>
    ${
      rows.length === 0
        ? html`<p class="note">No handler run or action recorded yet.</p>`
        : html`<table><thead><tr><th scope="col">At</th><th scope="col">What</th><th scope="col">Result</th><th scope="col">Detail or error</th></tr></thead>
    <tbody>${rows.map((r) => r.row)}</tbody></table>
    <p class="note">Run times are recorded for each handler's latest run (the table above), not for earlier attempts.</p>`
    }</section>`;
}

/** The delivery's trace (its ids come from the delivery id: log/trace.ts), to look it up in the tracing backend. */
function traceRow(deliveryId: string): Html {
  const { traceId, spanId } = deliveryTraceIds(deliveryId);
  return html`<dt>Trace</dt><dd><code>${traceId}</code> (receipt span <code>${spanId}</code>)</dd>`;
}

export async function deliveryPage(ctx: PageContext): Promise<PageOut> {
  // The router checked the id's form (a 400 otherwise).
  const id = ctx.segments[1]!;
  const found = await ctx.deps.store.deliveries.getDelivery(id);
  // Unknown and not-yours look the same: the page does not tell whether a delivery exists.
  if (!found || !maySee(ctx, found.delivery)) {
    return {
      status: 404,
      title: "Delivery not found",
      body: html`<p>No delivery <code>${id}</code> that you can see.</p>`,
    };
  }
  const d = found.delivery;
  const headers = Object.entries(d.headers)
    .filter(([k]) => !hiddenHeaders.test(k))
    .sort(([a], [b]) => a.localeCompare(b));
  const showPayload = ctx.url.searchParams.get("payload") === "1";
  const canReplay = mayAct(ctx, d);
  const [owner, repo] = (d.repository ?? "").split("/");
  const payload = parsed(d.payload);
  const [calls, actions, explained, ack] = await Promise.all([
    storedApiCalls(ctx.deps.store.kv, d.id),
    actionsOf(ctx.deps.store, d.id),
    explanations(ctx, d, payload),
    d.status === "dead" ? acknowledgementOf(ctx.deps.store, d) : undefined,
  ]);
  const links = linksOut(payload);
  const replays = actions.filter((a) => a.action === "replay" && a.ok).length;
  const replayed = ctx.url.searchParams.get("replayed");
  return {
    title: `Delivery ${d.id}`,
    body: html`
    ${replayed === "1" ? html`<p role="status">Queued again: 1 delivery.</p>` : replayed === "0" ? html`<p role="alert">Not replayed (it may be running): see the history.</p>` : ""}
    ${ack && ctx.url.searchParams.get("acknowledged") === "1" ? html`<p role="status">Acknowledged: it stays dead and "replay all" leaves it out.</p>` : ""}
    <dl>
      <dt>Event</dt><dd>${d.event}${d.action ? `.${d.action}` : ""}</dd>
      <dt>Repository</dt><dd>${d.repository ? html`${d.repository} (<a href="/console/policies/${owner}/${repo}">effective policy</a>)` : "—"}</dd>
      ${links.length ? html`<dt>On GitHub</dt><dd><ul class="links">${links.map((l) => html`<li><a href="${l.url}" rel="noopener noreferrer">${l.label}</a></li>`)}</ul></dd>` : ""}
      <dt>Installation</dt><dd>${d.installationId ?? "—"}</dd>
      <dt>Status</dt><dd>${statusBadge(d.status)}</dd>
      <dt>Attempts</dt><dd>${d.attempts}${replays ? html` since the last replay (replayed ${replays} ${replays === 1 ? "time" : "times"}: see the history)` : ""}</dd>
      <dt>Received</dt><dd>${time(d.receivedAt)}</dd>
      <dt>Updated</dt><dd>${time(d.updatedAt)}</dd>
      ${tracingExported() ? traceRow(d.id) : ""}
      ${d.status === "failed" ? html`<dt>Next attempt</dt><dd>${time(d.nextRunAt)}</dd>` : ""}
      ${d.lastError ? html`<dt>Last error</dt><dd><code>${d.lastError}</code></dd>` : ""}
      ${ack ? html`<dt>Acknowledged</dt><dd data-k="acknowledged">by <strong>${ack.login}</strong> ${time(ack.at)}${ack.reason ? html`: ${ack.reason}` : ""} (left dead on purpose)</dd>` : ""}
    </dl>
    ${
      canReplay && d.status !== "running"
        ? html`<form method="post" action="/console/deliveries/${encodeURIComponent(d.id)}/replay">
      <input type="hidden" name="csrf" value="${ctx.viewer.csrf}"><input type="hidden" name="back" value="/console/deliveries/${encodeURIComponent(d.id)}">
      <button type="submit">Replay this delivery</button></form>`
        : ""
    }
    ${
      canReplay && d.status === "dead" && !ack
        ? html`<form method="post" action="/console/deliveries/${encodeURIComponent(d.id)}/acknowledge">
      <input type="hidden" name="csrf" value="${ctx.viewer.csrf}">
      <label>Reason (optional) <input name="reason" maxlength="${MAX_REASON_CHARS}" size="40"></label>
      <button type="submit">Acknowledge: leave it dead</button></form>`
        : ""
    }
    <section aria-labelledby="handlers"><h2 id="handlers">Handlers: outcome, decision and reasons</h2>
    ${
      found.outcomes.length === 0
        ? html`<p class="note">No handler has run on it yet.</p>`
        : html`
    <table><thead><tr><th scope="col">Handler</th><th scope="col">Outcome</th><th scope="col">Decision and reasons</th><th scope="col">Attempts</th><th scope="col">Seconds</th><th scope="col">At</th></tr></thead>
    <tbody>${found.outcomes.map(
      (
        o,
      ) => html`<tr><th scope="row">${o.handler}</th><td>${statusBadge(o.status)}${o.status === "failed" ? html` <span class="note">(${failedNote(d, o)})</span>` : ""}</td>
      <td>${o.detail ? markdownInline(o.detail) : ""}</td><td>${o.attempts}</td><td>${o.seconds.toFixed(3)}</td><td>${time(o.updatedAt)}</td></tr>`,
    )}</tbody></table>`
    }
    </section>
    ${explained}
    ${historySection(found.attempts, actions)}
    ${apiCallsSection(calls)}
    <section aria-labelledby="headers"><h2 id="headers">Headers</h2>
    <table><tbody>${headers.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v}</td></tr>`)}</tbody></table></section>
    <section aria-labelledby="payload"><h2 id="payload">Payload</h2>
    ${showPayload ? html`<pre>${prettyPayload(d.payload)}</pre>` : html`<p><a href="/console/deliveries/${encodeURIComponent(d.id)}?payload=1#payload">Show the payload</a> (${d.payload.length} characters)</p>`}
    </section>`,
  };
}
