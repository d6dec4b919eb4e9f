// /console/flakes: the flakiest jobs the rerun handler recorded (rerun.flake_pattern), per
// repository the viewer can access, through the same reading as `steward flakes`.
import {
  parseDuration,
  type ConsoleContext,
  type ConsoleDelivery,
  type ConsoleHtml,
  type HandlerConsole,
} from "../../src/index.js";
import { flakyJobs } from "./flake-listing.js";
import { renderExplanation, titleOf, type Explanation } from "./explain.js";
import { historyKey } from "./keys.js";

const SINCE_CHOICES = ["7d", "30d", "90d", "180d"];
const DEFAULT_SINCE = "30d";
const JOBS_PER_REPOSITORY = 20;
/** Longest window: flake records are kept 180 days. */
const MAX_SINCE_MS = 180 * 86_400_000;

/** The filters from the query string: a repository the viewer may see (else all of theirs), a bounded duration. */
export function flakeFilters(
  params: URLSearchParams,
  scope: readonly string[],
): { repos: string[]; repo?: string; since: string; sinceMs: number; problem?: string } {
  const asked = params.get("repo") ?? "";
  const repo = asked ? scope.find((r) => r.toLowerCase() === asked.toLowerCase()) : undefined;
  const rawSince = (params.get("since") ?? "").trim() || DEFAULT_SINCE;
  const parsed = rawSince.length <= 16 ? parseDuration(rawSince) : undefined;
  const valid = parsed !== undefined && parsed > 0 && parsed <= MAX_SINCE_MS;
  const since = valid ? rawSince : DEFAULT_SINCE;
  const problem = !valid
    ? `"${rawSince.slice(0, 16)}" is not a duration from 1 minute to 180 days (like 7d or 12h): showing the last ${DEFAULT_SINCE}`
    : undefined;
  return {
    // A repository the viewer cannot see reads as none: nothing is shown, as if it did not exist.
    repos: asked ? (repo ? [repo] : []) : [...scope],
    ...(repo ? { repo } : {}),
    since,
    sinceMs: valid ? parsed : parseDuration(DEFAULT_SINCE)!,
    ...(problem ? { problem } : {}),
  };
}

async function flakesPage(ctx: ConsoleContext): Promise<ConsoleHtml> {
  const { html, time } = ctx;
  const f = flakeFilters(ctx.query, ctx.repositories);
  const found = await flakyJobs(ctx.store, { repos: f.repos, sinceMs: f.sinceMs, limit: JOBS_PER_REPOSITORY });
  const sinceChoices = SINCE_CHOICES.includes(f.since) ? SINCE_CHOICES : [...SINCE_CHOICES, f.since];
  const deliveriesOf = (repository: string) =>
    `/console/deliveries?${new URLSearchParams({ repository, event: "workflow_run" })}`;
  return html`<p class="note">Jobs that failed on a commit between two passing commits of the same branch (green, red, green), found by
      <code>rerun.flake_pattern</code>; the same list as <code>steward flakes --repo OWNER/NAME --since ${f.since}</code>.</p>
    ${f.problem ? html`<p role="alert">${f.problem}</p>` : ""}
    <form class="filters" method="get" action="/console/flakes">
      <label>Repository <select name="repo"><option value="">All you can see</option>
        ${ctx.repositories.map((r) => html`<option value="${r}"${r === f.repo ? html` selected` : ""}>${r}</option>`)}</select></label>
      <label>Since <select name="since">${sinceChoices.map((s) => html`<option value="${s}"${s === f.since ? html` selected` : ""}>last ${s}</option>`)}</select></label>
      <button type="submit">Show</button>
    </form>
    ${
      found.length === 0
        ? html`<p class="note">No flaky job recorded ${f.repo ? html`for ${f.repo} ` : ""}in the last ${f.since}.</p>`
        : found.map(
            (
              r,
            ) => html`<section aria-labelledby="${`flakes-${r.repository}`}"><h2 id="${`flakes-${r.repository}`}">${r.repository}</h2>
      <table><thead><tr><th scope="col">Workflow / job</th><th scope="col">Flakes</th><th scope="col">Re-run</th><th scope="col">Last seen</th><th scope="col">Last flaky run</th></tr></thead>
      <tbody>${r.jobs.map(
        (
          j,
        ) => html`<tr><td>${j.workflow} / ${j.job}</td><td data-k="count">${j.count}</td><td>${j.rerun}</td><td>${time(new Date(j.lastSeen))}</td>
        <td><a href="${`${ctx.webUrl}/${r.repository}/actions/runs/${j.lastRunId}`}">run ${j.lastRunId}</a> on <code>${j.lastSha.slice(0, 7)}</code>
        (<a href="${deliveriesOf(r.repository)}">deliveries</a>)</td></tr>`,
      )}</tbody></table></section>`,
          )
    }`;
}

/**
 * A workflow run's delivery: the decision recorded on that run attempt, as the commit's
 * `steward/rerun` check run explains it (which rule matched, on which log line; or why none did).
 */
async function explainDelivery(ctx: ConsoleContext, d: ConsoleDelivery): Promise<ConsoleHtml | undefined> {
  const p = d.payload as {
    repository?: { id?: unknown };
    workflow_run?: { id?: unknown; run_attempt?: unknown; head_sha?: unknown };
  } | null;
  const run = p?.workflow_run;
  const repoId = p?.repository?.id;
  if (d.event !== "workflow_run" || !run || typeof repoId !== "number" || typeof run.head_sha !== "string")
    return undefined;
  const history = (await ctx.store.get<Explanation[]>(historyKey(repoId, run.head_sha))) ?? [];
  const attempt = typeof run.run_attempt === "number" ? run.run_attempt : 1;
  const e = history.find((x) => x.runId === run.id && x.attempt === attempt);
  if (!e) return undefined;
  return ctx.html`<p><strong>${titleOf(e)}</strong> <span class="note">(decided ${ctx.time(new Date(e.at))})</span></p>${ctx.markdown(renderExplanation(e))}`;
}

export const rerunConsole: HandlerConsole = {
  pages: [{ path: "flakes", title: "Flaky jobs", render: flakesPage }],
  explain: explainDelivery,
};
