// /console/policies/{owner}/{repo}: the effective policy, each value with the file and line it came from.
import { html, type PageOut } from "../html.js";
import type { PageContext } from "../types.js";

export async function policyPage(ctx: PageContext): Promise<PageOut> {
  // Decoded and checked by the router (a 400 for a name GitHub would not give).
  const [, owner = "", repo = ""] = ctx.segments;
  const full = `${owner}/${repo}`;
  const known = ctx.access.repositories.find((r) => r.toLowerCase() === full.toLowerCase());
  if (!known)
    return {
      status: 404,
      title: "Repository not found",
      body: html`<p>No repository <code>${full}</code> that you can see.</p>`,
    };
  const view = ctx.deps.policyOf ? await ctx.deps.policyOf(owner, repo).catch(() => undefined) : undefined;
  if (!view)
    return { title: `Policy of ${known}`, body: html`<p class="note">The effective policy could not be read now.</p>` };
  return {
    title: `Policy of ${known}`,
    body: html`
    <p>Read from: ${view.sources.length ? view.sources.map((s, i) => html`${i ? ", then " : ""}<code>${s}</code>`) : "defaults only"}.</p>
    ${view.errors.length ? html`<section aria-labelledby="errors"><h2 id="errors">Problems</h2><ul>${view.errors.map((e) => html`<li>${e}</li>`)}</ul></section>` : ""}
    <table><thead><tr><th scope="col">Setting</th><th scope="col">Value</th><th scope="col">From</th></tr></thead>
    <tbody>${view.values.map((v) => html`<tr><th scope="row"><code>${v.path}</code></th><td><code>${JSON.stringify(v.value)}</code></td><td>${v.from}</td></tr>`)}</tbody></table>`,
  };
}
