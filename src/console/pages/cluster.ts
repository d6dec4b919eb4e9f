// The overview's cluster panel (Redis deployments, owners only): the replicas alive, what each holds
// (installations whose write slot it holds or whose token it mints, its delivery and task leases)
// and when it last reported, read from the replica registry /metrics reports too.
import { PROCESS_OWNER } from "../../lifecycle/process-owner.js";
import { html, time, type Html } from "../html.js";
import type { PageContext } from "../types.js";

export async function clusterSection(ctx: PageContext): Promise<Html> {
  const source = ctx.deps.replicas;
  if (!source || !ctx.viewer.owner) return html``;
  const mine = new Set(ctx.access.grants.filter((g) => g.owner).map((g) => String(g.id)));
  // Installations are named only where the viewer owns one of them; the others are counted.
  const named = (ids: readonly string[]) => {
    const shown = ids.filter((i) => mine.has(i));
    const others = ids.length - shown.length;
    if (ids.length === 0) return html`none`;
    return html`${shown.join(", ")}${others ? html`${shown.length ? " and " : ""}${others} other${others === 1 ? "" : "s"}` : ""}`;
  };
  let replicas;
  try {
    replicas = (await source()).sort((a, b) => a.startedAt - b.startedAt || a.id.localeCompare(b.id));
  } catch {
    return html`<section aria-labelledby="cluster"><h2 id="cluster">Cluster</h2><p class="note">Redis did not answer: the replicas cannot be listed now.</p></section>`;
  }
  return html`<section aria-labelledby="cluster"><h2 id="cluster">Cluster</h2>
    <p>Replicas alive: <strong data-k="replicas">${replicas.length}</strong></p>
    <table><thead><tr><th scope="col">Replica</th><th scope="col">Process</th><th scope="col">Write slots</th><th scope="col">Token mints</th><th scope="col">Delivery leases</th><th scope="col">Task leases</th><th scope="col">Started</th><th scope="col">Last heartbeat</th></tr></thead>
    <tbody>${replicas.map(
      (
        r,
      ) => html`<tr data-replica="${r.id}"><td>${r.id.split("/")[0]}${r.id === PROCESS_OWNER ? html` <span class="note">(serving this page)</span>` : ""}</td><td>${r.pid}</td>
      <td>${named(r.writeSlots)}</td><td>${named(r.tokenMints)}</td><td>${r.deliveryLeases}</td><td>${r.taskLeases}</td><td>${time(r.startedAt)}</td><td>${time(r.seenAt)}</td></tr>`,
    )}</tbody></table>
  </section>`;
}
