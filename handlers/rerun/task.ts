// A re-run decision to carry out, now or later (a scheduled task's data), and what carrying it
// out is handed.
import type { Logger } from "pino";
import type { CheckReporter, InstallationOctokit, Once, Scheduler, Store } from "../../src/index.js";
import type { RepoIdentity } from "../shared/fork.js";
import type { JobVerdict, RunFacts } from "./decide.js";
import type { RerunMode } from "./policy.js";

/** The parts of a handler or task context that carrying out a decision uses. */
export interface Ops {
  octokit: InstallationOctokit;
  store: Store;
  once: Once;
  checks: CheckReporter;
  scheduler: Scheduler;
  log: Logger;
  installationId: number | undefined;
}

export function opsOf(ctx: Ops): Ops {
  return {
    octokit: ctx.octokit,
    store: ctx.store,
    once: ctx.once,
    checks: ctx.checks,
    scheduler: ctx.scheduler,
    log: ctx.log,
    installationId: ctx.installationId,
  };
}

/** The repository a run belongs to. */
export interface RerunScope {
  owner: string;
  repo: string;
  repoId: number;
  /** `owner/name`. */
  fullName: string;
  repository: RepoIdentity;
}

/** Everything needed to carry out a decision later, without the delivery (JSON-serialisable). */
export interface RerunTask {
  owner: string;
  repo: string;
  repoId: number;
  run: RunFacts;
  htmlUrl?: string | undefined;
  maxAttempts: number;
  mode: RerunMode;
  delayMs: number;
  reasons: string[];
  verdicts: JobVerdict[];
  /** Mode `jobs`: the transient jobs; the first is re-run alone. */
  jobs?: { id: number; name: string }[] | undefined;
  /** `rerun.daily_budget` when the decision was made. */
  dailyBudget?: number | undefined;
  /** Times the API answered "already running". */
  tries: number;
  /** True when the task was delayed: whether the run is superseded is checked again before acting. */
  scheduled: boolean;
  /** A flake (failed between passing commits) re-run by the flake pattern, not by a rule. */
  flake?: boolean;
  /** Whether the policy's words were withheld from `reasons` and `verdicts` (see shared/visibility.ts). */
  withheld?: boolean;
}

export function isRerunTask(data: unknown): data is RerunTask {
  const d = data as Partial<RerunTask> | null;
  return (
    !!d &&
    typeof d.owner === "string" &&
    typeof d.repo === "string" &&
    typeof d.run?.id === "number" &&
    Array.isArray(d.verdicts)
  );
}
