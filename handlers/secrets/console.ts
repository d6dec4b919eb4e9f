// The secrets handler in the console. /console/secrets (owners): per organisation the viewer owns,
// what Steward last wrote (names and fingerprints, never values), the writes and deletions
// recorded, and the next sync; a fingerprint is an HMAC of the value: it shows change, not the
// value. On the overview: the next sync of each organisation the viewer owns.
import {
  clockTime,
  type ConsoleContext,
  type ConsoleHtml,
  type ConsoleTask,
  type HandlerConsole,
} from "../../src/index.js";
import { lastSyncKey, type LastSync } from "./organisation.js";
import { loadRecords } from "./records.js";
import type { TargetRecord } from "./targets.js";

// `_report`: a write report-only mode held back, shown with what it would have done.
const AUDIT_KINDS = [
  "secret_write",
  "variable_write",
  "secret_delete",
  "variable_delete",
  "secret_report",
  "variable_report",
];

function where(scope: TargetRecord["scope"]): string {
  return scope.level === "org"
    ? "organisation"
    : scope.level === "env"
      ? `${scope.repo} / ${scope.environment}`
      : String(scope.repo ?? "");
}

/**
 * Whether GitHub's record of the target is newer than Steward's own write, compared as instants:
 * the same moment spelled `…17Z` and `…17.000Z` is no drift. One second of slack, as the plan allows:
 * both are whole seconds, and the API may stamp its Date before it finishes the write.
 */
export function driftOf(r: Pick<TargetRecord, "remoteUpdatedAt" | "serverWrittenAt">): string {
  if (!r.remoteUpdatedAt || !r.serverWrittenAt) return "not known";
  const remote = Date.parse(r.remoteUpdatedAt);
  const ours = Date.parse(r.serverWrittenAt);
  if (!Number.isFinite(remote) || !Number.isFinite(ours)) return "not known";
  return remote > ours + 1000 ? "changed outside Steward" : "none seen";
}

/** The organisation a sync task is for, when it names one. */
const orgOf = (t: ConsoleTask) => (t.data as { org?: unknown } | undefined)?.org;
const kindOf = (t: ConsoleTask) => (t.data as { kind?: string }).kind;

async function secretsPage(ctx: ConsoleContext): Promise<ConsoleHtml> {
  const { html, time } = ctx;
  const tasks = await ctx.tasks();
  const audits = (await Promise.all(AUDIT_KINDS.map((kind) => ctx.store.auditLog({ kind, limit: 200 })))).flat();
  const sections = await Promise.all(
    ctx.owns.map(async (org) => {
      const records = [...(await loadRecords(ctx.store, org)).values()].filter((r) => r && typeof r.name === "string");
      const next = tasks.filter((t) => String(orgOf(t) ?? "").toLowerCase() === org);
      const recent = audits
        .filter(
          (a) =>
            String(a.details.org ?? a.details.organization ?? "").toLowerCase() === org ||
            String(a.details.repository ?? "")
              .toLowerCase()
              .startsWith(`${org}/`),
        )
        .sort((a, b) => b.at.getTime() - a.at.getTime())
        .slice(0, 20);
      const last = records
        .map((r) => r.writtenAt)
        .sort()
        .pop();
      return html`<section aria-labelledby="org-${org}"><h2 id="org-${org}">${org}</h2>
        <dl><dt>Last apply</dt><dd>${last ? time(new Date(last)) : "never"}</dd>
        <dt>Next sync</dt><dd>${next.length ? next.map((t) => html`${time(t.runAt)} (${kindOf(t) ?? "sync"}${t.status === "running" ? ", running now" : ""}) `) : "none scheduled"}</dd></dl>
        <h3>Targets Steward manages</h3>
        ${
          records.length === 0
            ? html`<p class="note">None yet.</p>`
            : html`<table><thead><tr><th scope="col">Kind</th><th scope="col">Name</th><th scope="col">Where</th><th scope="col">Fingerprint</th><th scope="col">Written</th><th scope="col">Drift</th></tr></thead>
        <tbody>${records.map(
          (
            r,
          ) => html`<tr><td>${r.kind}</td><td>${r.name}</td><td>${where(r.scope)}</td><td><code>${r.fingerprint.slice(0, 16)}</code></td><td>${time(new Date(r.writtenAt))}</td>
          <td>${driftOf(r)}</td></tr>`,
        )}</tbody></table>`
        }
        <h3>Recent writes</h3>
        ${recent.length === 0 ? html`<p class="note">None recorded.</p>` : html`<ul>${recent.map((a) => html`<li>${time(a.at)} ${a.kind}: ${String(a.details.name ?? "")} ${a.details.repository ? html`in ${String(a.details.repository)}` : ""}${a.details.would ? html` (${String(a.details.would)} ${String(a.details.scope ?? "")}, report only by ${String(a.details.reportOnly ?? "")})` : ""}</li>`)}</ul>`}
      </section>`;
    }),
  );
  return html`<p class="note">Names and fingerprints only: Steward never shows a secret's value.</p>${sections.length ? sections : html`<p class="note">You own no organisation with Steward installed.</p>`}`;
}

/** The last sync's result in words, from its record. */
function resultOf(last: LastSync): string {
  const parts = [
    `${last.applied} ${last.report ? "would have been written" : "written"}`,
    `${last.failures} failed`,
    ...(last.leftAlone ? [`${last.leftAlone} left alone`] : []),
  ];
  const paused = last.pausedUntil
    ? `; the rest delayed by GitHub's rate limit until ${clockTime(new Date(last.pausedUntil))}`
    : "";
  return `${parts.join(", ")} in ${last.repositories} repositories${paused}${last.report ? " (report only)" : ""}`;
}

/** A sync is an organisation's (the secrets page, owners only): shown to the owners of that organisation. */
async function syncsSection(ctx: ConsoleContext): Promise<ConsoleHtml> {
  const { html, time } = ctx;
  const tasks = await ctx.tasks();
  const rows = (
    await Promise.all(
      ctx.owns.map(async (org) => ({
        org,
        last: await ctx.store.get<LastSync>(lastSyncKey(org)),
        next: tasks.filter((t) => String(orgOf(t) ?? "").toLowerCase() === org),
      })),
    )
  ).filter((r) => r.last || r.next.length);
  return html`<section aria-labelledby="syncs"><h2 id="syncs">Secrets sync per organisation</h2>
    ${
      rows.length === 0
        ? html`<p class="note">No sync has run or is scheduled.</p>`
        : html`
    <table><thead><tr><th scope="col">Organisation</th><th scope="col">Last sync</th><th scope="col">Result</th><th scope="col">Next run</th><th scope="col">State</th></tr></thead>
    <tbody>${rows.map(
      ({ org, last, next }) =>
        html`<tr data-org="${org}"><td>${org}</td><td>${last ? html`${time(new Date(last.at))} by ${last.who}` : "never"}</td><td>${last ? resultOf(last) : ""}</td><td>${next.length ? next.map((t) => html`${time(t.runAt)} (${kindOf(t) ?? "sync"}) `) : "none scheduled"}</td><td>${next.map((t) => html`${t.status}${t.lastError ? html` (${t.lastError})` : ""} `)}</td></tr>`,
    )}</tbody></table>`
    }
  </section>`;
}

export const secretsConsole: HandlerConsole = {
  pages: [{ path: "secrets", title: "Secrets", ownersOnly: true, render: secretsPage }],
  overview: syncsSection,
};
