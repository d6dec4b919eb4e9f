// The deployments handler's part of impact simulation: how a deployments policy would have answered
// the last deployment requests, from the facts stored when they were answered (record.ts), against
// how they were answered.
import type { SimulationInput } from "../../src/index.js";
import { newest } from "../shared/impact.js";
import { evaluateGated } from "./org-gates.js";
import type { DeploymentsPolicy } from "./policy.js";
import { deploymentFactsPrefix, type DeploymentFactRecord } from "./record.js";

export const DEPLOYMENT_REQUESTS = 50;

export interface DeploymentImpact {
  requests: number;
  /** Approved then, held (waiting) now. */
  heldWereApproved: number;
  /** Approved then, rejected now. */
  rejectedWereApproved: number;
  /** Held or rejected then, approved now. */
  approvedWereNot: number;
}

export function deploymentImpact(
  policy: DeploymentsPolicy | undefined,
  records: readonly DeploymentFactRecord[],
  limit = DEPLOYMENT_REQUESTS,
): DeploymentImpact {
  const last = newest(records, limit);
  const out: DeploymentImpact = {
    requests: last.length,
    heldWereApproved: 0,
    rejectedWereApproved: 0,
    approvedWereNot: 0,
  };
  for (const r of last) {
    const request = { ...r.request, requestedAt: new Date(r.request.requestedAt) };
    // Judged at the moment it was first judged: windows and freezes as they were then, and under the
    // organisation gates that applied then (a repository's file cannot loosen them: the decision
    // had to satisfy both, and so does the simulation).
    const now = evaluateGated(policy, r.gates ?? [], request, r.facts, new Date(r.at)).decision;
    const then = r.last;
    if (then === "approve" && now === "wait") out.heldWereApproved++;
    else if (then === "approve" && now === "reject") out.rejectedWereApproved++;
    else if (then !== "approve" && then !== "none" && now === "approve") out.approvedWereNot++;
  }
  return out;
}

export function describeDeploymentImpact(d: DeploymentImpact): string {
  const parts = [`${d.heldWereApproved} held that were approved`];
  if (d.rejectedWereApproved) parts.push(`${d.rejectedWereApproved} rejected that were approved`);
  if (d.approvedWereNot) parts.push(`${d.approvedWereNot} approved that were held or rejected`);
  return d.requests === 0
    ? "no deployment requests recorded yet to simulate on"
    : `the last ${d.requests} deployment requests: ${parts.join(", ")}`;
}

/** The facts recorded for one repository's deployment requests (or every repository's), in any order. */
export async function readDeploymentFacts(
  store: SimulationInput["store"],
  repository?: string,
): Promise<DeploymentFactRecord[]> {
  return (await store.list<DeploymentFactRecord>(deploymentFactsPrefix(repository))).map((e) => e.value);
}

export async function simulateDeployments({
  policy,
  store,
  repository,
}: SimulationInput<DeploymentsPolicy>): Promise<string> {
  return describeDeploymentImpact(deploymentImpact(policy, await readDeploymentFacts(store, repository)));
}
