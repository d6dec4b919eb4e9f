// Pure decisions of the workflow-run state machine: which jobs may start, which are
// skipped, what a run concluded, and whether (and what) a re-run may re-run.

export type JobStatus = "queued" | "in_progress" | "waiting" | "completed";
export type JobConclusion =
  "success" | "failure" | "cancelled" | "timed_out" | "skipped" | "action_required" | "neutral";

export interface JobView {
  name: string;
  needs: string[];
  status: JobStatus;
  conclusion: JobConclusion | null;
}

/**
 * The most attempts a run may have (the service refuses a re-run beyond it): GitHub allows 50
 * re-runs of one run ("Limits in GitHub Actions"), so the first run and 50 re-runs, attempt 51.
 */
export const MAX_RUN_ATTEMPTS = 51;

const FAILED: ReadonlySet<string> = new Set(["failure", "cancelled", "timed_out"]);

/** Conclusion of a run from its jobs' conclusions (all jobs completed). */
export function runConclusion(conclusions: (JobConclusion | null)[]): JobConclusion {
  if (conclusions.includes("failure")) return "failure";
  if (conclusions.includes("timed_out")) return "timed_out";
  if (conclusions.includes("cancelled")) return "cancelled";
  if (conclusions.includes("action_required")) return "action_required";
  if (conclusions.length > 0 && conclusions.every((c) => c === "skipped")) return "skipped";
  return "success";
}

/** Queued jobs whose needs all succeeded (or were skipped by a condition: not modelled). */
export function jobsReadyToStart(jobs: JobView[]): string[] {
  const byName = new Map(jobs.map((j) => [j.name, j]));
  return jobs
    .filter((j) => j.status === "queued" && j.needs.every((n) => byName.get(n)?.conclusion === "success"))
    .map((j) => j.name);
}

/** Queued jobs that can never start because something they need did not succeed. */
export function jobsToSkip(jobs: JobView[]): string[] {
  const byName = new Map(jobs.map((j) => [j.name, j]));
  return jobs
    .filter(
      (j) =>
        j.status === "queued" &&
        j.needs.some((n) => {
          const need = byName.get(n);
          return need !== undefined && need.status === "completed" && need.conclusion !== "success";
        }),
    )
    .map((j) => j.name);
}

/** `all` jobs, the `failed` ones, or one `job` (each with its dependents). */
export type RerunMode = "all" | "failed" | "job";

export type RerunDecision =
  | { allowed: true; rerun: string[]; keep: string[]; reasons: string[] }
  | { allowed: false; status: 403; message: string; reasons: string[] };

/**
 * Whether a run may be re-run, and which jobs run again. `failed` mode re-runs failed
 * (failure, cancelled, timed out) jobs and every job that needs them, directly or not; the
 * other jobs keep their results.
 */
export function planRerun(
  run: { status: string; attempt: number; jobs: JobView[] },
  mode: RerunMode,
  maxAttempts = MAX_RUN_ATTEMPTS,
  job?: string,
): RerunDecision {
  if (run.status !== "completed") {
    return {
      allowed: false,
      status: 403,
      message: "This workflow is already running",
      reasons: [`run status is ${run.status}`],
    };
  }
  if (run.attempt + 1 > maxAttempts) {
    return {
      allowed: false,
      status: 403,
      message: "This workflow run cannot be retried",
      reasons: [`attempt ${run.attempt + 1} would exceed the cap of ${maxAttempts}`],
    };
  }
  if (mode === "all")
    return { allowed: true, rerun: run.jobs.map((j) => j.name), keep: [], reasons: ["re-run all jobs"] };

  const failed =
    mode === "job"
      ? run.jobs.filter((j) => j.name === job).map((j) => j.name)
      : run.jobs.filter((j) => j.conclusion !== null && FAILED.has(j.conclusion)).map((j) => j.name);
  if (failed.length === 0) {
    return {
      allowed: false,
      status: 403,
      message: "This workflow run cannot be retried",
      reasons: ["no failed jobs to re-run"],
    };
  }
  const rerun = new Set(failed);
  // Dependents of a re-run job must run again too: grow the set until it is closed.
  let grew = true;
  while (grew) {
    grew = false;
    for (const j of run.jobs) {
      if (!rerun.has(j.name) && j.needs.some((n) => rerun.has(n))) {
        rerun.add(j.name);
        grew = true;
      }
    }
  }
  const order = run.jobs.map((j) => j.name);
  return {
    allowed: true,
    rerun: order.filter((n) => rerun.has(n)),
    keep: order.filter((n) => !rerun.has(n)),
    reasons: [`failed jobs: ${failed.join(", ")}`, `with dependents: ${order.filter((n) => rerun.has(n)).join(", ")}`],
  };
}

/** Steps' conclusions when a job ends: those before the failing step succeed, it fails, later ones are skipped. */
export function stepConclusions(
  stepCount: number,
  conclusion: JobConclusion,
  failingStep: number | null,
): (JobConclusion | null)[] {
  if (conclusion === "success" || conclusion === "skipped") return Array.from({ length: stepCount }, () => conclusion);
  const at = failingStep ?? stepCount - 1;
  return Array.from({ length: stepCount }, (_, i) => (i < at ? "success" : i === at ? conclusion : "skipped"));
}
