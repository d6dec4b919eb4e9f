// Acting on the flake pattern: each flake found is claimed once, recorded for `steward flakes`, and
// its job re-run alone on the red commit's run (within the attempt cap and the daily budget), with
// the reason in that commit's `steward/rerun` check run.
import type { RepoIdentity } from "../shared/fork.js";
import type { RerunPolicy } from "./policy.js";
import { DECIDED_TTL_MS } from "./claim.js";
import { attemptOrBudgetStop, type JobVerdict, type RunFacts } from "./decide.js";
import { carryOut } from "./execute.js";
import { explainAndReport } from "./history.js";
import type { Ops, RerunTask } from "./task.js";
import { branchHistory } from "./flake-facts.js";
import { findFlakes, flakePrefix, flakeReason, type Flake, type FlakeRecord } from "./flake.js";
import { usedToday } from "./budget.js";

/** Flake records are kept this long (the listing's longest useful window). */
export const FLAKE_TTL_MS = 180 * 24 * 3_600_000;

export interface FlakeScope {
  owner: string;
  repo: string;
  repoId: number;
  repository: RepoIdentity;
}

/** Look for flakes around `run`; one line per flake acted on (empty when none). */
export async function flakePass(ops: Ops, policy: RerunPolicy, scope: FlakeScope, run: RunFacts): Promise<string[]> {
  const ref = { owner: scope.owner, repo: scope.repo };
  const flakes = findFlakes(await branchHistory(ops.octokit, ref, run, scope.repository), run.id);
  const lines: string[] = [];
  for (const flake of flakes) {
    const key = `rerun:flake:${scope.repoId}:${flake.run.id}:${flake.run.runAttempt}:${flake.job.name}`;
    if (!(await ops.store.claim(key, { ttlMs: DECIDED_TTL_MS }))) continue;
    try {
      lines.push(await actOn(ops, policy, scope, flake));
    } catch (err) {
      await ops.store.release(key);
      throw err;
    }
  }
  return lines;
}

async function actOn(ops: Ops, policy: RerunPolicy, scope: FlakeScope, flake: Flake): Promise<string> {
  const reason = flakeReason(flake);
  const stop = attemptOrBudgetStop(policy, flake.run, await usedToday(ops.store, scope.repoId, policy.daily_budget));
  const verdict: JobVerdict = { id: flake.job.id, name: flake.job.name, conclusion: "failure", transient: true, reason };
  const task: RerunTask = {
    owner: scope.owner,
    repo: scope.repo,
    repoId: scope.repoId,
    run: flake.run,
    maxAttempts: policy.max_attempts,
    mode: "jobs",
    jobs: [flake.job],
    dailyBudget: policy.daily_budget,
    delayMs: 0,
    reasons: stop ? [reason, stop] : [reason],
    verdicts: [verdict],
    tries: 0,
    // The red commit is not the branch's tip (C came after it): re-run it all the same.
    scheduled: false,
    flake: true,
  };
  let rerun = false;
  let why = stop;
  if (stop) await explainAndReport(ops, task, "gave_up");
  else {
    const outcome = await carryOut(ops, task);
    rerun = outcome.status === "done";
    if (outcome.status === "skipped") why = outcome.reason;
  }
  const record: FlakeRecord = {
    repository: `${scope.owner}/${scope.repo}`,
    workflow: flake.run.name,
    job: flake.job.name,
    branch: flake.run.headBranch ?? "",
    sha: flake.run.headSha,
    runId: flake.run.id,
    attempt: flake.run.runAttempt,
    before: flake.before,
    after: flake.after,
    rerun,
    ...(why ? { why } : {}),
    at: new Date().toISOString(),
  };
  await ops.store.set(`${flakePrefix(record.repository)}${flake.run.id}:${flake.run.runAttempt}:${flake.job.name}`, record, { ttlMs: FLAKE_TTL_MS });
  await ops.store.audit({ kind: "rerun_flake", source: "rerun", details: { ...record } });
  return `${reason}: ${rerun ? "re-ran it" : `not re-run (${why ?? "no reason"})`}`;
}
