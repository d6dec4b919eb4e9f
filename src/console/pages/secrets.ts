// /console/secrets (owners): per organisation the viewer owns, what Steward last wrote
// (names and fingerprints, never values), the writes and deletions recorded, and the
// next sync. A fingerprint is an HMAC of the value: it shows change, not the value.
import { html, time, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";

interface RecordView {
  kind: string;
  scope: { level: string; repo?: string; environment?: string };
  name: string;
  fingerprint: string;
  remoteUpdatedAt?: string;
  serverWrittenAt?: string;
  writtenAt: string;
}

const AUDIT_KINDS = ["secret_write", "variable_write", "secret_delete", "variable_delete"];

function where(scope: RecordView["scope"]): string {
  return scope.level === "org" ? "organisation" : scope.level === "env" ? `${scope.repo} / ${scope.environment}` : String(scope.repo ?? "");
}

export async function secretsPage(ctx: PageContext): Promise<PageOut> {
  const tasks = await ctx.deps.store.tasks.listTasks();
  const audits = (await Promise.all(AUDIT_KINDS.map((kind) => ctx.deps.store.kv.auditLog({ kind, limit: 200 })))).flat();
  const sections = await Promise.all(
    ctx.access.ownerOf.map(async (org) => {
      const records = (await ctx.deps.store.kv.list<RecordView>(`secrets/target/${org}/`)).map((e) => e.value).filter((r) => r && typeof r.name === "string");
      const next = tasks.filter((t) => t.handler === "secrets" && ((t.data as { org?: string })?.org ?? "").toLowerCase() === org);
      const recent = audits
        .filter((a) => String(a.details.org ?? a.details.organization ?? "").toLowerCase() === org || String(a.details.repository ?? "").toLowerCase().startsWith(`${org}/`))
        .sort((a, b) => b.at.getTime() - a.at.getTime())
        .slice(0, 20);
      const last = records.map((r) => r.writtenAt).sort().pop();
      return html`<section aria-labelledby="org-${org}"><h2 id="org-${org}">${org}</h2>
        <dl><dt>Last apply</dt><dd>${last ? time(new Date(last)) : "never"}</dd>
        <dt>Next sync</dt><dd>${next.length ? next.map((t) => html`${time(t.runAt)} (${(t.data as { kind?: string }).kind ?? "sync"}${t.status === "running" ? ", running now" : ""}) `) : "none scheduled"}</dd></dl>
        <h3>Targets Steward manages</h3>
        ${records.length === 0 ? html`<p class="note">None yet.</p>` : html`<table><thead><tr><th scope="col">Kind</th><th scope="col">Name</th><th scope="col">Where</th><th scope="col">Fingerprint</th><th scope="col">Written</th><th scope="col">Drift</th></tr></thead>
        <tbody>${records.map((r) => html`<tr><td>${r.kind}</td><td>${r.name}</td><td>${where(r.scope)}</td><td><code>${r.fingerprint.slice(0, 16)}</code></td><td>${time(new Date(r.writtenAt))}</td>
          <td>${r.remoteUpdatedAt && r.serverWrittenAt && r.remoteUpdatedAt > r.serverWrittenAt ? "changed outside Steward" : "none seen"}</td></tr>`)}</tbody></table>`}
        <h3>Recent writes</h3>
        ${recent.length === 0 ? html`<p class="note">None recorded.</p>` : html`<ul>${recent.map((a) => html`<li>${time(a.at)} ${a.kind}: ${String(a.details.name ?? "")} ${a.details.repository ? html`in ${String(a.details.repository)}` : ""}</li>`)}</ul>`}
      </section>`;
    }),
  );
  return {
    title: "Secrets",
    body: html`<p class="note">Names and fingerprints only: Steward never shows a secret's value.</p>${sections.length ? sections : html`<p class="note">You own no organisation with Steward installed.</p>`}`,
  };
}
