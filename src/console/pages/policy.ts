// /console/policies/{owner}/{repo}: the effective policy as YAML (as a file would say it), each
// value with the file and line it came from.
import { Document, isScalar } from "yaml";
import { html, type PageOut } from "../html.js";
import type { PageContext, PolicyView } from "../types.js";

/** The effective policy as one YAML document, each value commented with where it came from. */
export function policyYaml(values: PolicyView["values"]): string {
  const doc = new Document({});
  const placed = values.filter((v) => v.keys.length > 0);
  for (const v of placed) doc.setIn(v.keys, doc.createNode(v.value));
  for (const v of placed) {
    const node = doc.getIn(v.keys, true);
    const note = v.from === "default" ? " handler default" : ` from ${v.from}`;
    if (isScalar(node)) node.comment = note;
    else if (node && typeof node === "object") (node as { commentBefore?: string }).commentBefore = note;
  }
  return doc.toString();
}

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
    <section aria-labelledby="yaml"><h2 id="yaml">Effective policy</h2><pre><code data-k="yaml">${policyYaml(view.values)}</code></pre></section>
    <section aria-labelledby="values"><h2 id="values">Where each value came from</h2>
    <table><thead><tr><th scope="col">Setting</th><th scope="col">Value</th><th scope="col">From</th></tr></thead>
    <tbody>${view.values.map((v) => html`<tr><th scope="row"><code>${v.path}</code></th><td><code>${JSON.stringify(v.value)}</code></td><td>${v.from}</td></tr>`)}</tbody></table></section>`,
  };
}
