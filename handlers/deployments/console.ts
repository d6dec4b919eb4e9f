// /console/deployments: gates waiting (what they wait for, next evaluation) and decided (with the
// reasons), for the repositories the viewer can access. Read from the handler's own records
// (waits.ts) and the audit trail.
import type { ConsoleContext, ConsoleHtml, HandlerConsole } from "../../src/index.js";
import { allWaits, taskKey, type WaitRecord } from "./waits.js";

const DECIDED_SHOWN = 50;

async function deploymentsPage(ctx: ConsoleContext): Promise<ConsoleHtml> {
  const { html, time } = ctx;
  const visible = (repository: string) => ctx.repositories.some((r) => r.toLowerCase() === repository.toLowerCase());
  const [waits, tasks, answers] = await Promise.all([
    allWaits(ctx.store),
    ctx.tasks(),
    ctx.store.auditLog({ kind: "deployment_answer", limit: 500 }),
  ]);
  const waiting = waits.map((w) => w.record).filter((w) => w?.gate && visible(`${w.gate.owner}/${w.gate.repo}`));
  const nextRun = (w: WaitRecord) => tasks.find((t) => t.key === taskKey(w.gate))?.runAt;
  const decided = answers
    .filter((a) => typeof a.details.repository === "string" && visible(a.details.repository))
    .slice(0, DECIDED_SHOWN);
  return html`
    <section aria-labelledby="waiting"><h2 id="waiting">Waiting</h2>
    ${
      waiting.length === 0
        ? html`<p class="note">No deployment is waiting on Steward.</p>`
        : html`
    <table><thead><tr><th scope="col">Repository</th><th scope="col">Environment</th><th scope="col">Run</th><th scope="col">Commit</th><th scope="col">Waiting since</th><th scope="col">Waiting for</th><th scope="col">Next evaluation</th></tr></thead>
    <tbody>${waiting.map(
      (
        w,
      ) => html`<tr><td>${w.gate.owner}/${w.gate.repo}</td><td>${w.gate.environment}</td><td>${w.gate.runId}</td><td><code>${w.sha.slice(0, 12)}</code></td>
      <td>${time(new Date(w.requestedAt))}</td><td>${w.lastComment ? ctx.markdown(w.lastComment) : "its policy's conditions"}</td><td>${time(nextRun(w))}</td></tr>`,
    )}</tbody></table>`
    }
    </section>
    <section aria-labelledby="decided"><h2 id="decided">Decided</h2>
    ${
      decided.length === 0
        ? html`<p class="note">No deployment decided yet.</p>`
        : html`
    <table><thead><tr><th scope="col">At</th><th scope="col">Repository</th><th scope="col">Environment</th><th scope="col">Run</th><th scope="col">Decision</th><th scope="col">Reasons</th></tr></thead>
    <tbody>${decided.map(
      (
        a,
      ) => html`<tr><td>${time(a.at)}</td><td>${a.details.repository}</td><td>${a.details.environment}</td><td>${a.details.runId}</td><td>${a.details.state}</td>
      <td>${Array.isArray(a.details.reasons) ? html`<ul>${(a.details.reasons as unknown[]).map((r) => html`<li>${ctx.markdown(String(r), { inline: true })}</li>`)}</ul>` : ""}</td></tr>`,
    )}</tbody></table>`
    }
    </section>`;
}

export const deploymentsConsole: HandlerConsole = {
  pages: [{ path: "deployments", title: "Deployments", render: deploymentsPage }],
};
