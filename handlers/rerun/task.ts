// A re-run decision to carry out, now or later (a scheduled task's data), and what carrying it
// out is handed.
import type { Logger } from "pino";
import type { CheckReporter, InstallationOctokit, Scheduler, Store } from "../../src/index.js";
import type { JobVerdict, RunFacts } from "./decide.js";
import type { RerunMode } from "./policy.js";

export interface Ops {
  octokit: InstallationOctokit;
  store: Store;
  checks: CheckReporter;
  scheduler: Scheduler;
  log: Logger;
  installationId: number | undefined;
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
}

export function isRerunTask(data: unknown): data is RerunTask {
  const d = data as Partial<RerunTask> | null;
  return !!d && typeof d.owner === "string" && typeof d.repo === "string" && typeof d.run?.id === "number" && Array.isArray(d.verdicts);
}
