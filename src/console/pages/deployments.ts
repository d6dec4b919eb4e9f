// /console/deployments: gates waiting (what they wait for, next evaluation) and decided
// (with the reasons), for the repositories the viewer can access. Read from the
// deployments handler's own records and the audit trail.
import { html, time, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";

interface WaitView {
  gate: { owner: string; repo: string; runId: number; environment: string; path?: string };
  sha: string;
  ref?: string;
  requestedAt: string;
  lastComment?: string;
}

const DECIDED_SHOWN = 50;

export async function deploymentsPage(ctx: PageContext): Promise<PageOut> {
  const visible = (repository: string) => ctx.access.repositories.some((r) => r.toLowerCase() === repository.toLowerCase());
  const [waits, tasks, answers] = await Promise.all([
    ctx.deps.store.kv.list<WaitView>("deployments:wait:"),
    ctx.deps.store.tasks.listTasks(),
    ctx.deps.store.kv.auditLog({ kind: "deployment_answer", limit: 500 }),
  ]);
  const waiting = waits.map((w) => w.value).filter((w) => w?.gate && visible(`${w.gate.owner}/${w.gate.repo}`));
  const nextRun = (w: WaitView) => {
    const id = `${w.gate.path ?? ""}:${w.gate.owner}/${w.gate.repo}:${w.gate.runId}:${w.gate.environment.toLowerCase()}`.toLowerCase();
    return tasks.find((t) => t.handler === "deployments" && t.key === id)?.runAt;
  };
  const decided = answers
    .filter((a) => typeof a.details.repository === "string" && visible(a.details.repository))
    .slice(0, DECIDED_SHOWN);
  return {
    title: "Deployments",
    body: html`
    <section aria-labelledby="waiting"><h2 id="waiting">Waiting</h2>
    ${waiting.length === 0 ? html`<p class="note">No deployment is waiting on Steward.</p>` : html`
    <table><thead><tr><th scope="col">Repository</th><th scope="col">Environment</th><th scope="col">Run</th><th scope="col">Commit</th><th scope="col">Waiting since</th><th scope="col">Waiting for</th><th scope="col">Next evaluation</th></tr></thead>
    <tbody>${waiting.map((w) => html`<tr><td>${w.gate.owner}/${w.gate.repo}</td><td>${w.gate.environment}</td><td>${w.gate.runId}</td><td><code>${w.sha.slice(0, 12)}</code></td>
      <td>${time(new Date(w.requestedAt))}</td><td>${w.lastComment ?? "its policy's conditions"}</td><td>${time(nextRun(w))}</td></tr>`)}</tbody></table>`}
    </section>
    <section aria-labelledby="decided"><h2 id="decided">Decided</h2>
    ${decided.length === 0 ? html`<p class="note">No deployment decided yet.</p>` : html`
    <table><thead><tr><th scope="col">At</th><th scope="col">Repository</th><th scope="col">Environment</th><th scope="col">Run</th><th scope="col">Decision</th><th scope="col">Reasons</th></tr></thead>
    <tbody>${decided.map((a) => html`<tr><td>${time(a.at)}</td><td>${a.details.repository}</td><td>${a.details.environment}</td><td>${a.details.runId}</td><td>${a.details.state}</td>
      <td>${Array.isArray(a.details.reasons) ? html`<ul>${(a.details.reasons as unknown[]).map((r) => html`<li>${r}</li>`)}</ul>` : ""}</td></tr>`)}</tbody></table>`}
    </section>`,
  };
}
