// Acting on the flake pattern: each flake found is acted on once (`ctx.once`), recorded for `steward flakes`, and
// its job re-run alone on the red commit's run (within the attempt cap and the daily budget), with
// the reason in that commit's `steward/rerun` check run.
import type { RerunPolicy } from "./policy.js";
import { flakeKey, flakePrefix } from "./keys.js";
import { attemptOrBudgetStop, type JobVerdict, type RunFacts } from "./decide.js";
import { carryOut, wouldRerunText } from "./execute.js";
import { explainAndReport } from "./history.js";
import type { Ops, RerunScope, RerunTask } from "./task.js";
import { branchHistory } from "./facts.js";
import { findFlakes, flakeReason, type Flake, type FlakeRecord } from "./flake.js";
import { usedToday } from "./budget.js";

/** Flake records are kept this long (the listing's longest useful window). */
export const FLAKE_TTL_MS = 180 * 24 * 3_600_000;

/** Look for flakes around `run`; one line per flake acted on (empty when none). */
export async function flakePass(
  ops: Ops,
  policy: RerunPolicy,
  scope: RerunScope,
  run: RunFacts,
  report?: string,
): Promise<string[]> {
  const ref = { owner: scope.owner, repo: scope.repo };
  const flakes = findFlakes(await branchHistory(ops.octokit, ref, run, scope.repository), run.id);
  const lines: string[] = [];
  for (const flake of flakes) {
    // Each flake is acted on once, whichever of its neighbours' runs finds it first.
    const acted = await ops.once(flakeKey(scope.repoId, flake.run.id, flake.run.runAttempt, flake.job.name), {
      run: () => actOn(ops, policy, scope, flake, report),
    });
    if (acted.state !== "recorded") lines.push(acted.value);
  }
  return lines;
}

async function actOn(
  ops: Ops,
  policy: RerunPolicy,
  scope: RerunScope,
  flake: Flake,
  report: string | undefined,
): Promise<string> {
  const reason = flakeReason(flake);
  const stop = attemptOrBudgetStop(policy, flake.run, await usedToday(ops.store, scope.repoId, policy.daily_budget));
  const verdict: JobVerdict = {
    id: flake.job.id,
    name: flake.job.name,
    conclusion: "failure",
    transient: true,
    reason,
  };
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
  else if (report) {
    // Report mode: the flake is recorded and explained as it would be, and not re-run.
    why = `report only, by ${report}`;
    await explainAndReport(ops, task, "would_rerun", wouldRerunText(task, report));
  } else {
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
  await ops.store.set(
    `${flakePrefix(record.repository)}${flake.run.id}:${flake.run.runAttempt}:${flake.job.name}`,
    record,
    { ttlMs: FLAKE_TTL_MS },
  );
  await ops.store.audit({ kind: "rerun_flake", source: "rerun", details: { ...record } });
  if (report && !stop) return `${reason}: would have re-run it (${why})`;
  return `${reason}: ${rerun ? "re-ran it" : `not re-run (${why ?? "no reason"})`}`;
}
