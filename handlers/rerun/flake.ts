// The flake pattern (`rerun.flake_pattern`): a job that failed on commit B but passed on the commits
// A before and C after it on the same branch (green, red, green) is a flake, whatever its log says.
// Pure: finding flakes in a branch's run history, and ranking recorded flakes. No I/O.
import type { RunFacts } from "./decide.js";

const FAILED = new Set(["failure", "timed_out"]);

/** One commit of a branch, as its newest run of the workflow saw it (latest attempt). */
export interface CommitRun {
  run: RunFacts;
  /** Job name → its id and conclusion in the run's latest attempt. */
  jobs: ReadonlyMap<string, { id: number; conclusion: string | null }>;
}

export interface Flake {
  /** The run on the red commit B. */
  run: RunFacts;
  job: { id: number; name: string };
  /** Head shas of A (before) and C (after). */
  before: string;
  after: string;
}

/** What Steward records per flake it found (the `steward flakes` listing reads these). */
export interface FlakeRecord {
  repository: string;
  workflow: string;
  job: string;
  branch: string;
  sha: string;
  runId: number;
  attempt: number;
  before: string;
  after: string;
  /** Whether Steward re-ran the job, and why not when it did not. */
  rerun: boolean;
  why?: string;
  at: string;
}

/**
 * The one run per commit, oldest commit first: the newest run of each head sha (a commit pushed twice
 * or re-triggered counts once). Runs are ordered by id, which follows the order they were created in.
 */
export function commitOrder(runs: readonly RunFacts[]): RunFacts[] {
  const newest = new Map<string, RunFacts>();
  for (const r of runs) {
    const seen = newest.get(r.headSha);
    if (!seen || seen.id < r.id) newest.set(r.headSha, r);
  }
  return [...newest.values()].sort((a, b) => a.id - b.id);
}

/**
 * Runs whose jobs the flake search around `current` needs: the run itself and two commits either
 * side (the triples B can sit in with the current run as A, B or C).
 */
export function window(ordered: readonly RunFacts[], currentId: number): RunFacts[] {
  const at = ordered.findIndex((r) => r.id === currentId);
  if (at < 0) return [];
  return ordered.slice(Math.max(0, at - 2), at + 3);
}

/** Every green-red-green triple of commits that includes the current run, job by job. */
export function findFlakes(history: readonly CommitRun[], currentId: number): Flake[] {
  const at = history.findIndex((c) => c.run.id === currentId);
  if (at < 0) return [];
  const flakes: Flake[] = [];
  for (let mid = Math.max(1, at - 1); mid <= Math.min(history.length - 2, at + 1); mid++) {
    const [a, b, c] = [history[mid - 1]!, history[mid]!, history[mid + 1]!];
    for (const [name, job] of b.jobs) {
      if (!job.conclusion || !FAILED.has(job.conclusion)) continue;
      if (a.jobs.get(name)?.conclusion !== "success" || c.jobs.get(name)?.conclusion !== "success") continue;
      flakes.push({ run: b.run, job: { id: job.id, name }, before: a.run.headSha, after: c.run.headSha });
    }
  }
  return flakes;
}

export function flakeReason(f: Flake): string {
  return `flake pattern: job ${f.job.name} failed on ${f.run.headSha.slice(0, 7)} but passed on ${f.before.slice(0, 7)} before it and ${f.after.slice(0, 7)} after it on branch ${f.run.headBranch ?? "(none)"}`;
}

export interface FlakyJob {
  workflow: string;
  job: string;
  count: number;
  rerun: number;
  lastSeen: string;
  lastSha: string;
  /** The run of the last flake (on the red commit). */
  lastRunId: number;
}

/** Recorded flakes since `since`, counted per workflow and job, flakiest first. */
export function rankFlakes(records: readonly FlakeRecord[], since: Date): FlakyJob[] {
  const byJob = new Map<string, FlakyJob>();
  for (const r of records) {
    if (Date.parse(r.at) < since.getTime()) continue;
    const key = `${r.workflow}\u0000${r.job}`;
    const entry = byJob.get(key) ?? {
      workflow: r.workflow,
      job: r.job,
      count: 0,
      rerun: 0,
      lastSeen: r.at,
      lastSha: r.sha,
      lastRunId: r.runId,
    };
    entry.count++;
    if (r.rerun) entry.rerun++;
    if (r.at >= entry.lastSeen) Object.assign(entry, { lastSeen: r.at, lastSha: r.sha, lastRunId: r.runId });
    byJob.set(key, entry);
  }
  return [...byJob.values()].sort(
    (a, b) => b.count - a.count || b.lastSeen.localeCompare(a.lastSeen) || a.job.localeCompare(b.job),
  );
}
