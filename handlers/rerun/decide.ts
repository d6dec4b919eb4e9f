// The re-run decision: given a completed run, its jobs, the logs asked for, and whether the run
// is still current, decide to skip, give up, or re-run, and say why. Pure: no I/O.
import { matchesAny } from "../../src/index.js";
import {
  DEFAULT_RULE_CONCLUSIONS,
  GITHUB_MAX_ATTEMPTS,
  GITHUB_MAX_RERUNS,
  delayMs,
  type RerunMode,
  type RerunPolicy,
  type RerunRule,
} from "./policy.js";
import { scanLogSync, type ScannedLog } from "./scan.js";

export interface RunFacts {
  id: number;
  /** The run's workflow id (to list the branch's earlier and later runs of the same workflow). */
  workflowId?: number;
  /** Workflow name, e.g. `CI`. */
  name: string;
  /** Workflow file path, e.g. `.github/workflows/ci.yml` (may carry an `@ref` suffix). */
  path?: string | null;
  event: string;
  headBranch: string | null;
  headSha: string;
  conclusion: string | null;
  runAttempt: number;
  /** Pull request numbers the run belongs to (empty for pushes and fork pull requests). */
  pullRequests: number[];
  /** Owner of the repository the head branch lives in (a fork's owner for fork pull requests). */
  headOwner?: string | null;
  /** `owner/name` of the fork whose code the run ran (a fork pull request); null or absent: the repository's own code. */
  fromFork?: string | null;
}

export interface StepFacts {
  name: string;
  conclusion: string | null;
}

export interface JobFacts {
  id: number;
  name: string;
  conclusion: string | null;
  steps: StepFacts[];
}

/** Where the run's branch or pull request points now; `undefined` sha when it could not be told. */
export interface CurrentHead {
  /** What was looked at, e.g. `pull request #7` or `branch main`. */
  source: string;
  /** Current head sha, `null` when the branch or pull request is gone, `undefined` when unknown. */
  sha: string | null | undefined;
}

export interface JobVerdict {
  id: number;
  name: string;
  conclusion: string | null;
  transient: boolean;
  /** Index of the first matching rule, when one matched. */
  rule?: number;
  /** Why the job is (or is not) transient. */
  reason: string;
  /** Set when a rule could not be evaluated (its log matching was stopped at its bound): why. */
  stopped?: string;
}

export type Decision =
  | { decision: "skip"; reasons: string[]; verdicts: JobVerdict[] }
  | { decision: "give_up"; reasons: string[]; verdicts: JobVerdict[] }
  | {
      decision: "rerun";
      reasons: string[];
      verdicts: JobVerdict[];
      /** The mode actually used: `jobs` re-runs `jobs[0]` alone (GitHub re-runs one job per request). */
      mode: RerunMode;
      delayMs: number;
      /** Mode `jobs`: the transient jobs, in order; the first is re-run now, the rest after its attempt. */
      jobs?: { id: number; name: string }[];
    };

export interface DecideInput {
  /** The section; `mode: report` decides as `failed_jobs` (what is done with it is execute's business). */
  policy: RerunPolicy;
  run: RunFacts;
  jobs: JobFacts[];
  /**
   * Logs of the jobs in `logsToFetch`, as text or already scanned (see scan.ts); a missing or null
   * entry means the log was unavailable.
   */
  logs: ReadonlyMap<number, string | ScannedLog | null>;
  current: CurrentHead;
  /** Re-runs Steward already requested in this repository today (for `rerun.daily_budget`). */
  usedToday?: number;
  /** Why the rules' own words (globs, log patterns) must not appear in the explanation, if so. */
  withheld?: string;
}

const FAILED_STEP = new Set(["failure", "timed_out"]);

/** Job or run conclusions the policy treats as failures: failure, timed_out, and cancelled if a rule names it. */
export function failureConclusions(policy: RerunPolicy): Set<string> {
  const set = new Set<string>(DEFAULT_RULE_CONCLUSIONS);
  if (policy.rules.some((r) => r.conclusions?.includes("cancelled"))) set.add("cancelled");
  return set;
}

function workflowMatches(globs: readonly string[], run: RunFacts): boolean {
  if (matchesAny(globs, run.name)) return true;
  const path = run.path?.replace(/@.*$/, "");
  if (!path) return false;
  const file = path.split("/").pop()!;
  return matchesAny(globs, path) || matchesAny(globs, file);
}

/**
 * Why the run is out of the policy's scope, or undefined when it is in scope. `anyConclusion`: a
 * passing run counts too (the flake pattern looks at green runs around a red one).
 */
export function outOfScope(
  policy: RerunPolicy,
  run: RunFacts,
  o: { anyConclusion?: boolean } = {},
): string | undefined {
  if (!policy.enabled) return "re-runs are not enabled for this repository (rerun.enabled is false)";
  // A fork's code writes its own logs: it could fake a transient failure to be re-run forever.
  if (run.fromFork && !policy.forks) return `run of fork pull request from ${run.fromFork}; rerun.forks is false`;
  if (!o.anyConclusion && (!run.conclusion || !failureConclusions(policy).has(run.conclusion))) {
    return `run concluded "${run.conclusion ?? "none"}", which is not a failure the policy re-runs`;
  }
  if (policy.events ? !policy.events.includes(run.event) : run.event === "schedule") {
    return `event "${run.event}" is not in rerun.events`;
  }
  if (policy.workflows && !workflowMatches(policy.workflows, run)) {
    return `workflow "${run.name}" is not in rerun.workflows`;
  }
  return branchOutOfScope(policy, run.headBranch);
}

/** Why a run on `branch` is out of `rerun.branches`, or undefined when it is in. */
export function branchOutOfScope(
  policy: Pick<RerunPolicy, "branches">,
  branch: string | null | undefined,
): string | undefined {
  if (policy.branches && !(branch && matchesAny(policy.branches, branch)))
    return `branch "${branch ?? "(none)"}" is not in rerun.branches`;
  return undefined;
}

export function failedJobs(policy: RerunPolicy, jobs: readonly JobFacts[]): JobFacts[] {
  const failing = failureConclusions(policy);
  return jobs.filter((j) => j.conclusion !== null && failing.has(j.conclusion));
}

/** The steps the rules look at: those that failed. */
export function failedSteps(job: JobFacts): StepFacts[] {
  return job.steps.filter((s) => s.conclusion !== null && FAILED_STEP.has(s.conclusion));
}

/** Outcome of testing one rule's conditions except `log`: which condition failed, if any. */
function ruleMismatchWithoutLog(rule: RerunRule, job: JobFacts, withheld?: string): string | undefined {
  const list = (what: string, items: readonly string[]) => (withheld ? `the rule's ${what}` : `[${items.join(", ")}]`);
  const conclusions = rule.conclusions ?? DEFAULT_RULE_CONCLUSIONS;
  if (!job.conclusion || !conclusions.includes(job.conclusion as never))
    return `conclusion "${job.conclusion}" not in [${conclusions.join(", ")}]`;
  if (rule.jobs && !matchesAny(rule.jobs, job.name)) return `job name not in ${list("jobs", rule.jobs)}`;
  const steps = failedSteps(job);
  if (rule.steps && !steps.some((s) => matchesAny(rule.steps!, s.name))) {
    return steps.length ? `failed step "${steps[0]!.name}" not in ${list("steps", rule.steps)}` : "no failed step";
  }
  if (rule.runner_lost === true && steps.length > 0)
    return `step "${steps[0]!.name}" failed, so the runner was not lost`;
  if (rule.runner_lost === false && steps.length === 0) return "no step failed";
  return undefined;
}

/**
 * Jobs whose log some rule would read: a rule with `log` whose other conditions hold and that no earlier
 * log-free rule pre-empts. Only these logs need downloading.
 */
export function logsToFetch(policy: RerunPolicy, run: RunFacts, jobs: readonly JobFacts[]): number[] {
  if (outOfScope(policy, run)) return [];
  const failed = failedJobs(policy, jobs);
  if (failed.length > policy.max_failed_jobs) return [];
  return failed.filter((job) => needsLog(policy.rules, job)).map((job) => job.id);
}

/** Whether the first rule whose other conditions hold for `job` reads its log (that rule either matches outright or needs it). */
export function needsLog(rules: readonly RerunRule[], job: JobFacts): boolean {
  const first = rules.find((rule) => !ruleMismatchWithoutLog(rule, job));
  return Boolean(first?.log);
}

/** Classify one failed job against the rules: the first rule whose every condition holds. */
export function classifyJob(
  rules: readonly RerunRule[],
  job: JobFacts,
  log: string | ScannedLog | null | undefined,
  withheld?: string,
): JobVerdict {
  const base = { id: job.id, name: job.name, conclusion: job.conclusion };
  if (rules.length === 0)
    return { ...base, transient: true, reason: "rules is empty: every failure in scope is re-run" };
  const misses: string[] = [];
  for (const [i, rule] of rules.entries()) {
    const miss = ruleMismatchWithoutLog(rule, job, withheld);
    if (miss) {
      misses.push(`rule ${i + 1}: ${miss}`);
      continue;
    }
    if (rule.log) {
      if (log == null) {
        misses.push(`rule ${i + 1}: log unavailable`);
        continue;
      }
      const scanned = typeof log === "string" ? scanLogSync(log, rule.log) : log;
      const hit = rule.log.find((spec) => scanned.matched.has(spec));
      if (!hit && scanned.stopped) {
        // Not known whether the rule matches: fail closed, no later rule decides in its place.
        const stopped = `rule ${i + 1}: ${scanned.stopped}, so the rule was not evaluated`;
        misses.push(stopped);
        return { ...base, transient: false, stopped, reason: `cannot evaluate the rules (${misses.join("; ")})` };
      }
      if (!hit) {
        misses.push(
          `rule ${i + 1}: log matches none of ${withheld ? "the rule's patterns" : `[${rule.log.join(", ")}]`}`,
        );
        continue;
      }
      return {
        ...base,
        transient: true,
        rule: i,
        reason: withheld
          ? `matched rule ${i + 1}`
          : `matched rule ${i + 1} (${describeRule(rule)}; log matched ${hit})`,
      };
    }
    return {
      ...base,
      transient: true,
      rule: i,
      reason: withheld ? `matched rule ${i + 1}` : `matched rule ${i + 1} (${describeRule(rule)})`,
    };
  }
  return { ...base, transient: false, reason: `no rule matched (${misses.join("; ")})` };
}

export function describeRule(rule: RerunRule): string {
  const parts: string[] = [];
  if (rule.jobs) parts.push(`jobs ${rule.jobs.join(", ")}`);
  if (rule.steps) parts.push(`steps ${rule.steps.join(", ")}`);
  if (rule.conclusions) parts.push(`conclusions ${rule.conclusions.join(", ")}`);
  if (rule.log) parts.push(`log ${rule.log.join(", ")}`);
  if (rule.runner_lost !== undefined) parts.push(`runner_lost ${rule.runner_lost}`);
  return parts.length ? parts.join("; ") : "any failure";
}

/** Why the run no longer tests the tip of its pull request or branch, or undefined when it still does. */
export function supersededReason(run: Pick<RunFacts, "headSha">, current: CurrentHead): string | undefined {
  if (current.sha === null) return `superseded: ${current.source} no longer exists`;
  if (current.sha === undefined) return `cannot tell whether the run is superseded (${current.source})`;
  if (current.sha !== run.headSha) {
    return `superseded: ${current.source} is now at ${current.sha.slice(0, 7)}, the run tested ${run.headSha.slice(0, 7)}`;
  }
  return undefined;
}

export function decide(input: DecideInput): Decision {
  const { policy, run, jobs, logs, current } = input;
  const scope = outOfScope(policy, run);
  if (scope) return { decision: "skip", reasons: [scope], verdicts: [] };

  const stale = supersededReason(run, current);
  if (stale) return { decision: "skip", reasons: [stale], verdicts: [] };

  const failed = failedJobs(policy, jobs);
  if (failed.length === 0) return { decision: "skip", reasons: ["no failed job to re-run"], verdicts: [] };

  if (failed.length > policy.max_failed_jobs) {
    const verdicts = failed.map((j) => ({
      id: j.id,
      name: j.name,
      conclusion: j.conclusion,
      transient: false,
      reason: "not classified",
    }));
    return {
      decision: "give_up",
      reasons: [
        `${failed.length} jobs failed, more than rerun.max_failed_jobs (${policy.max_failed_jobs}): treated as a real breakage`,
      ],
      verdicts,
    };
  }

  const verdicts = failed.map((j) => classifyJob(policy.rules, j, logs.get(j.id), input.withheld));
  const reasons: string[] = [];
  const note = input.withheld ? [`the rules' globs and patterns are withheld from this report: ${input.withheld}`] : [];
  const real = verdicts.filter((v) => !v.transient);
  const transient = verdicts.filter((v) => v.transient);
  // Mode `jobs` re-runs the transient jobs alone; the other modes need every failure transient.
  const partial = policy.mode === "jobs" && transient.length > 0;
  if (real.length > 0 && !partial)
    reasons.push(
      `${real.length} of ${verdicts.length} failed jobs are not transient: ${real.map((v) => v.name).join(", ")}`,
    );
  // A rule that could not be evaluated never counts as matching: said here, not only in the job's verdict.
  for (const v of verdicts) if (v.stopped) reasons.push(`${v.name} is not re-run: ${v.stopped}`);

  const stop = attemptOrBudgetStop(policy, run, input.usedToday ?? 0);
  if (stop) reasons.push(stop);
  if (reasons.length > 0) return { decision: "give_up", reasons: [...reasons, ...note], verdicts };

  const next = `attempt ${run.runAttempt + 1} of ${policy.max_attempts}`;
  if (partial && (real.length > 0 || transient.length === 1)) {
    const [first, ...later] = transient;
    const why = [`re-running job ${first!.name} alone (rerun.mode: jobs); ${next}`, ...note];
    for (const v of real) why.push(`${v.name} stays failed: not transient (${v.reason})`);
    if (later.length)
      why.push(
        `${later.map((v) => v.name).join(", ")}: re-run after this attempt (GitHub re-runs one job per request)`,
      );
    return {
      decision: "rerun",
      reasons: why,
      verdicts,
      mode: "jobs",
      delayMs: delayMs(policy),
      jobs: transient.map((v) => ({ id: v.id, name: v.name })),
    };
  }
  return {
    decision: "rerun",
    reasons: [`all ${verdicts.length} failed jobs are transient; ${next}`, ...note],
    verdicts,
    // Every failure is transient: one request re-runs them all, even in mode `jobs`.
    mode: policy.mode === "jobs" || policy.mode === "report" ? "failed_jobs" : policy.mode,
    delayMs: delayMs(policy),
  };
}

/** How each stop's reason begins, so a report can name which one stopped it. */
export const CAP_STOP = "GitHub's re-run limit";
export const ATTEMPTS_STOP = "attempts exhausted";
export const BUDGET_STOP = "budget:";

/** Why no further re-run may be made: GitHub's cap, the policy's attempts, or the daily budget. */
export function attemptOrBudgetStop(
  policy: Pick<RerunPolicy, "max_attempts" | "daily_budget">,
  run: Pick<RunFacts, "runAttempt">,
  usedToday: number,
): string | undefined {
  if (run.runAttempt >= GITHUB_MAX_ATTEMPTS)
    return `${CAP_STOP}: attempt ${run.runAttempt} is the last GitHub allows (${GITHUB_MAX_RERUNS} re-runs of one run)`;
  if (run.runAttempt >= policy.max_attempts)
    return `attempt ${run.runAttempt} of ${policy.max_attempts}: ${ATTEMPTS_STOP} (rerun.max_attempts)`;
  return budgetStop(policy, usedToday);
}

/** The daily budget's refusal, or undefined while it has room. */
export function budgetStop(policy: Pick<RerunPolicy, "daily_budget">, usedToday: number): string | undefined {
  if (policy.daily_budget === undefined || usedToday < policy.daily_budget) return undefined;
  return `${BUDGET_STOP} the repository's daily budget of ${policy.daily_budget} re-runs is spent (${usedToday} today, rerun.daily_budget)`;
}
