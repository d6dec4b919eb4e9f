// /console/pauses (owners): what is paused, and forms to pause or resume one handler, one
// installation or everything: the same records `steward pause` and `steward resume` write (the
// store, every replica, kept across restarts, audited with who did it). An installation is an
// owner's to pause when they own its account; a handler or everything covers every installation,
// so only someone who owns every installation of the app pauses those from the console (the
// operator's CLI is not limited so).
import { html, time, type Html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";
import { describeScope, listPauses, pause, resume, scopeOf, type Pause, type PauseScope } from "../../engine/pauses.js";

/** Why the viewer may not pause or resume `scope`, or undefined when they may. */
export function pauseRefusal(ctx: Pick<PageContext, "access" | "deps">, scope: PauseScope): string | undefined {
  const owned = ctx.access.grants.filter((g) => g.owner);
  if (scope.kind === "installation") {
    return owned.some((g) => g.id === scope.installation)
      ? undefined
      : `only an owner of installation ${scope.installation}'s account pauses it`;
  }
  const count = ctx.deps.installationCount?.();
  if (count === undefined) return "the app's installations are not known yet: use steward pause on the host";
  if (owned.length < count)
    return `${describeScope(scope)} covers every installation of the app, and you own ${owned.length} of its ${count}: use steward pause on the host`;
  if (scope.kind === "handler" && !ctx.deps.handlers.includes(scope.handler))
    return `no handler named ${scope.handler} is loaded`;
  return undefined;
}

/** The pauses this viewer is shown: everything and handlers to all, an installation to those who reach it. */
export async function visiblePauses(ctx: Pick<PageContext, "access" | "deps">): Promise<Pause[]> {
  const pauses = await listPauses(ctx.deps.store.kv);
  return pauses.filter(
    (p) => p.scope.kind !== "installation" || ctx.access.installations.includes(p.scope.installation),
  );
}

/** The overview's line of what is paused, linking to the page for owners. */
export async function pausedSection(ctx: PageContext): Promise<Html> {
  const pauses = await visiblePauses(ctx);
  const link = ctx.viewer.owner ? html` <a href="/console/pauses">Pause or resume</a>` : "";
  return html`<section aria-labelledby="paused"><h2 id="paused">Paused</h2>
    ${
      pauses.length === 0
        ? html`<p data-k="paused">Nothing is paused.${link}</p>`
        : html`<p class="note">Deliveries are recorded and answered as usual; what a pause covers runs when it is resumed, in the order it arrived.${link}</p>
      <ul data-k="paused">${pauses.map((p) => html`<li><strong>${describeScope(p.scope)}</strong> paused by ${p.by} at ${time(new Date(p.at))}</li>`)}</ul>`
    }</section>`;
}

function scopeFields(scope: PauseScope): Html {
  if (scope.kind === "handler") return html`<input type="hidden" name="handler" value="${scope.handler}">`;
  if (scope.kind === "installation")
    return html`<input type="hidden" name="installation" value="${String(scope.installation)}">`;
  return html`<input type="hidden" name="all" value="1">`;
}

export async function pausesPage(ctx: PageContext): Promise<PageOut> {
  const { viewer, deps } = ctx;
  const pauses = await visiblePauses(ctx);
  const csrf = html`<input type="hidden" name="csrf" value="${viewer.csrf}">`;
  const done = ctx.url.searchParams.get("done");
  const owned = ctx.access.grants.filter((g) => g.owner);
  const wide = pauseRefusal(ctx, { kind: "all" });
  return {
    title: "Pauses",
    body: html`
    ${done === "paused" || done === "resumed" ? html`<p role="status">${done === "paused" ? "Paused" : "Resumed"}.</p>` : ""}
    <p class="note">While paused, deliveries keep being recorded and answered 202, and nothing a pause covers runs: no delivery, scheduled task or handler start. Resuming works off what waited, in order. <code>steward pause</code> and <code>steward resume</code> on the host do the same.</p>
    <h2>Paused now</h2>
    ${
      pauses.length === 0
        ? html`<p data-k="paused">Nothing is paused.</p>`
        : html`<table><thead><tr><th scope="col">What</th><th scope="col">By</th><th scope="col">Since</th><th scope="col"></th></tr></thead>
      <tbody data-k="paused">${pauses.map((p) => {
        const refused = pauseRefusal(ctx, p.scope);
        return html`<tr><th scope="row">${describeScope(p.scope)}</th><td>${p.by}</td><td>${time(new Date(p.at))}</td>
        <td>${refused ? html`<span class="note">${refused}</span>` : html`<form method="post" action="/console/pauses/resume">${csrf}${scopeFields(p.scope)}<button type="submit">Resume ${describeScope(p.scope)}</button></form>`}</td></tr>`;
      })}</tbody></table>`
    }
    <h2>Pause</h2>
    ${
      owned.length
        ? html`<form method="post" action="/console/pauses/pause" aria-label="Pause an installation">${csrf}
      <label>Installation <select name="installation">${owned.map((g) => html`<option value="${String(g.id)}">${g.account} (${String(g.id)})</option>`)}</select></label>
      <button type="submit">Pause this installation</button></form>`
        : ""
    }
    ${
      wide
        ? html`<p class="note">Pausing a handler or everything: ${wide}.</p>`
        : html`<form method="post" action="/console/pauses/pause" aria-label="Pause a handler">${csrf}
      <label>Handler <select name="handler">${deps.handlers.map((h) => html`<option value="${h}">${h}</option>`)}</select></label>
      <button type="submit">Pause this handler</button></form>
      <form method="post" action="/console/pauses/pause" aria-label="Pause everything">${csrf}<input type="hidden" name="all" value="1">
      <button type="submit">Pause everything</button></form>`
    }`,
  };
}

/**
 * POST /console/pauses/pause and /console/pauses/resume, after the CSRF check: the scope the form
 * names (`handler`, `installation`, or `all`), if the viewer may; recorded as `console:LOGIN`.
 */
export async function pauseAction(
  ctx: PageContext,
  form: URLSearchParams,
  action: "pause" | "resume",
): Promise<{ redirect: string } | { page: PageOut }> {
  let scope: PauseScope;
  try {
    const handler = form.get("handler") ?? undefined;
    const installation = form.get("installation") ?? undefined;
    // Everything is said in so many words: a form that lost its field must not pause or resume it all.
    if (handler === undefined && installation === undefined && form.get("all") !== "1")
      throw new Error("name a handler, an installation, or everything");
    scope = scopeOf(handler, installation);
  } catch (error) {
    return { page: refusedPage(400, (error as Error).message) };
  }
  const refused = pauseRefusal(ctx, scope);
  if (refused) return { page: refusedPage(403, refused) };
  const by = `console:${ctx.viewer.login}`;
  if (action === "pause") await pause(ctx.deps.store.kv, scope, by);
  else await resume(ctx.deps.store.kv, scope, by);
  ctx.deps.pausesChanged?.();
  return { redirect: `/console/pauses?done=${action === "pause" ? "paused" : "resumed"}` };
}

function refusedPage(status: number, reason: string): PageOut {
  return {
    status,
    title: "Not paused or resumed",
    body: html`<p>${reason}.</p><p><a href="/console/pauses">Back to pauses</a></p>`,
  };
}
