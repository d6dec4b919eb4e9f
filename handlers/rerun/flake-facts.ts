// API reads of the flake pattern: the branch's recent completed runs of the same workflow, and the
// jobs of the few runs around the one that just completed.
import type { InstallationOctokit } from "../../src/index.js";
import type { RepoIdentity } from "../shared/fork.js";
import type { RunFacts } from "./decide.js";
import { listJobs, toRunFacts, type ApiRun, type RepoRef } from "./facts.js";
import { commitOrder, window, type CommitRun } from "./flake.js";

/** One page of the branch's history is enough: the pattern only looks two commits either side. */
const HISTORY_RUNS = 30;

/** The commits around `run` on its branch, oldest first, each with its newest run's jobs. */
export async function branchHistory(octokit: InstallationOctokit, ref: RepoRef, run: RunFacts, repository: RepoIdentity): Promise<CommitRun[]> {
  if (run.workflowId === undefined || !run.headBranch) return [];
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", {
    ...ref,
    workflow_id: run.workflowId,
    branch: run.headBranch,
    event: run.event,
    status: "completed",
    per_page: HISTORY_RUNS,
  });
  const runs = (data.workflow_runs as unknown as ApiRun[]).map((r) => toRunFacts(r, undefined, repository));
  // The listing may lag behind the delivery: the run that just completed is known for sure.
  if (!runs.some((r) => r.id === run.id)) runs.push(run);
  const around = window(commitOrder(runs), run.id);
  const history: CommitRun[] = [];
  for (const r of around) {
    const jobs = await listJobs(octokit, ref, r.id, r.runAttempt);
    history.push({ run: r, jobs: new Map(jobs.map((j) => [j.name, { id: j.id, conclusion: j.conclusion }])) });
  }
  return history;
}
