// The rerun handler's part of impact simulation: what a rerun policy would have decided on the last
// failed runs, from the facts stored when they were decided (records.ts), against what was decided.
// The stored log tails are matched against the policy's patterns off the event loop, within one
// matching budget for the whole simulation (a log it could not match counts as not re-run).
import { MatchBudget, type SimulationInput } from "../../src/index.js";
import { newest } from "../shared/impact.js";
import { decide, outOfScope } from "./decide.js";
import { scanLog, type ScannedLog } from "./scan.js";
import { actingPolicy, type RerunPolicy } from "./policy.js";
import { rerunFactsPrefix, type RerunFactRecord } from "./record.js";

export const RERUN_RUNS = 200;

export interface RerunImpact {
  runs: number;
  /** Re-runs Steward decided on those runs. */
  was: number;
  /** Re-runs the policy would have decided. */
  would: number;
  /** Runs the policy would bring into scope whose jobs were never read: not counted in `would`. */
  unknown: number;
}

export async function rerunImpact(
  given: RerunPolicy,
  records: readonly RerunFactRecord[],
  limit = RERUN_RUNS,
): Promise<RerunImpact> {
  const policy = actingPolicy(given).policy;
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
    for (const [id, tail] of r.logs ?? [])
      logs.set(id, typeof tail === "string" ? await scanLog(tail, specs, budget) : null);
    const d = decide({ policy: { ...policy, daily_budget: undefined }, run: r.run, jobs: r.jobs, logs, current });
    if (d.decision === "rerun") would++;
  }
  return { runs: last.length, was: last.filter((r) => r.decision === "rerun").length, would, unknown };
}

const times = (n: number) => `${n} time${n === 1 ? "" : "s"}`;

export function describeRerunImpact(r: RerunImpact): string {
  const unknown = r.unknown
    ? ` (${r.unknown} more ${r.unknown === 1 ? "run comes" : "runs come"} into scope whose jobs were never read)`
    : "";
  return r.runs === 0
    ? "no failed runs recorded yet to simulate re-runs on"
    : `the last ${r.runs} failed runs would have been re-run ${times(r.would)} (was ${r.was})${unknown}`;
}

export async function simulateRerun({ policy, store, repository }: SimulationInput<RerunPolicy>): Promise<string> {
  const records = (await store.list<RerunFactRecord>(rerunFactsPrefix(repository))).map((e) => e.value);
  return describeRerunImpact(await rerunImpact(policy, records)) + describeRerunMode(policy);
}

/** The policy's report mode, as simulation shows it: the counts above are then what it would report. */
export function describeRerunMode(policy: RerunPolicy): string {
  if (policy.mode === "report") return " (rerun.mode: report: reported in steward/rerun, none requested)";
  const rules = policy.rules.flatMap((r, i) => (r.mode === "report" ? [i + 1] : []));
  if (rules.length === 0) return "";
  const which = rules.length === 1 ? `rule ${rules[0]} is` : `rules ${rules.join(", ")} are`;
  return ` (${which} in report mode: the re-runs they take part in are reported, not requested)`;
}
