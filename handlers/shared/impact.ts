// Impact simulation: what a policy would have done with the requests Steward already decided, from
// the facts it stored when it decided them: records in, counts and a sentence out. The stored log
// tails are matched against the policy's patterns off the event loop, within one matching budget
// for the whole simulation (a log it could not match counts as not re-run).
import { MatchBudget } from "../../src/index.js";
import { decide, outOfScope } from "../rerun/decide.js";
import { scanLog, type ScannedLog } from "../rerun/scan.js";
import type { RerunPolicy } from "../rerun/policy.js";
import type { RerunFactRecord } from "../rerun/record.js";
import { evaluateGated } from "../deployments/org-gates.js";
import type { DeploymentsPolicy } from "../deployments/policy.js";
import type { DeploymentFactRecord } from "../deployments/record.js";

export const RERUN_RUNS = 200;
export const DEPLOYMENT_REQUESTS = 50;

export interface RerunImpact {
  runs: number;
  /** Re-runs Steward decided on those runs. */
  was: number;
  /** Re-runs the policy would have decided. */
  would: number;
  /** Runs the policy would bring into scope whose jobs were never read: not counted in `would`. */
  unknown: number;
}

/** The newest `limit` records, oldest first (records come in any order). */
function newest<T extends { at: string }>(records: readonly T[], limit: number): T[] {
  return [...records].sort((a, b) => a.at.localeCompare(b.at)).slice(-limit);
}

export async function rerunImpact(policy: RerunPolicy, records: readonly RerunFactRecord[], limit = RERUN_RUNS): Promise<RerunImpact> {
  const last = newest(records, limit);
  const budget = new MatchBudget();
  const specs = policy.rules.flatMap((r) => r.log ?? []);
  let would = 0;
  let unknown = 0;
  for (const r of last) {
    if (!r.jobs) {
      if (!outOfScope(policy, r.run)) unknown++;
      continue;
    }
    const current = r.current ?? { source: "the run's commit", sha: r.run.headSha };
    // Budgets are left out: they depend on the day's other decisions, not on this run.
    const logs = new Map<number, ScannedLog | null>();
    for (const [id, tail] of r.logs ?? []) logs.set(id, typeof tail === "string" ? await scanLog(tail, specs, budget) : null);
    const d = decide({ policy: { ...policy, daily_budget: undefined }, run: r.run, jobs: r.jobs, logs, current });
    if (d.decision === "rerun") would++;
  }
  return { runs: last.length, was: last.filter((r) => r.decision === "rerun").length, would, unknown };
}

export interface DeploymentImpact {
  requests: number;
  /** Approved then, held (waiting) now. */
  heldWereApproved: number;
  /** Approved then, rejected now. */
  rejectedWereApproved: number;
  /** Held or rejected then, approved now. */
  approvedWereNot: number;
}

export function deploymentImpact(policy: DeploymentsPolicy | undefined, records: readonly DeploymentFactRecord[], limit = DEPLOYMENT_REQUESTS): DeploymentImpact {
  const last = newest(records, limit);
  const out: DeploymentImpact = { requests: last.length, heldWereApproved: 0, rejectedWereApproved: 0, approvedWereNot: 0 };
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

const times = (n: number) => `${n} time${n === 1 ? "" : "s"}`;

/** The simulation in words, one line per section simulated. */
export function describeImpact(o: { rerun?: RerunImpact; deployments?: DeploymentImpact }): string[] {
  const lines: string[] = [];
  if (o.rerun) {
    const r = o.rerun;
    const unknown = r.unknown ? ` (${r.unknown} more ${r.unknown === 1 ? "run comes" : "runs come"} into scope whose jobs were never read)` : "";
    lines.push(r.runs === 0 ? "no failed runs recorded yet to simulate re-runs on" : `the last ${r.runs} failed runs would have been re-run ${times(r.would)} (was ${r.was})${unknown}`);
  }
  if (o.deployments) {
    const d = o.deployments;
    const parts = [`${d.heldWereApproved} held that were approved`];
    if (d.rejectedWereApproved) parts.push(`${d.rejectedWereApproved} rejected that were approved`);
    if (d.approvedWereNot) parts.push(`${d.approvedWereNot} approved that were held or rejected`);
    lines.push(d.requests === 0 ? "no deployment requests recorded yet to simulate on" : `the last ${d.requests} deployment requests: ${parts.join(", ")}`);
  }
  return lines;
}
