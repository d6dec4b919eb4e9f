// What the re-run reads from GitHub and the store, behind one interface so the decisions stay
// pure: the run, its jobs for one attempt, job logs, where the run's pull request or branch points
// now, the branch's run history for the flake pattern, and today's re-runs.
import { downloadWithoutAuth, MatchBudget, type InstallationOctokit, type Store } from "../../src/index.js";
import { forkOf, type RepoIdentity } from "../shared/fork.js";
import { policyWithheld } from "../shared/visibility.js";
import { logsToFetch, type CurrentHead, type DecideInput, type JobFacts, type RunFacts } from "./decide.js";
import { commitOrder, window, type CommitRun } from "./flake.js";
import { usedToday } from "./budget.js";
import type { RerunPolicy } from "./policy.js";
import { LOG_TAIL_CHARS } from "./record.js";
import { scanLog } from "./scan.js";

/** Logs are read for substring/regex search only; past this size only the tail is kept (errors print last). */
export const MAX_LOG_CHARS = 8 * 1024 * 1024;
/** Larger logs are not downloaded at all (a runaway job printing gigabytes). */
export const MAX_LOG_BYTES = 64 * 1024 * 1024;

export interface ApiRun {
  id: number;
  workflow_id?: number;
  name?: string | null;
  path?: string | null;
  event: string;
  head_branch: string | null;
  head_sha: string;
  conclusion: string | null;
  status?: string | null;
  run_attempt?: number;
  html_url?: string;
  // The webhook schema allows null entries (a pull request in a fork the app cannot see).
  pull_requests?: ({ number: number } | null)[] | null;
  head_repository?: RepoIdentity | null;
  repository?: RepoIdentity | null;
}

/**
 * The decision's view of a run, from a `workflow_run` payload or `GET .../actions/runs/{id}`.
 * `repository` (the delivery's) is what the head repository is compared with when the run object
 * does not carry its own.
 */
export function toRunFacts(
  run: ApiRun,
  workflow?: { name?: string; path?: string } | null,
  repository?: RepoIdentity,
): RunFacts {
  return {
    id: run.id,
    ...(run.workflow_id === undefined ? {} : { workflowId: run.workflow_id }),
    name: run.name ?? workflow?.name ?? "",
    path: run.path ?? workflow?.path ?? null,
    event: run.event,
    headBranch: run.head_branch,
    headSha: run.head_sha,
    conclusion: run.conclusion,
    runAttempt: run.run_attempt ?? 1,
    pullRequests: (run.pull_requests ?? []).flatMap((p) => (p ? [p.number] : [])),
    headOwner: run.head_repository?.owner?.login ?? null,
    fromFork: forkOf(run.head_repository, run.repository ?? repository) ?? null,
  };
}

export interface RepoRef {
  owner: string;
  repo: string;
}

function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown }).status;
  return typeof status === "number" ? status : undefined;
}

export async function getRun(
  octokit: InstallationOctokit,
  ref: RepoRef,
  runId: number,
): Promise<ApiRun & { status: string | null }> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...ref, run_id: runId });
  return data as ApiRun & { status: string | null };
}

/** Every job of one attempt of a run (paginated). */
export async function listJobs(
  octokit: InstallationOctokit,
  ref: RepoRef,
  runId: number,
  attempt: number,
): Promise<JobFacts[]> {
  const jobs = await octokit.paginate(
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs",
    {
      ...ref,
      run_id: runId,
      attempt_number: attempt,
      per_page: 100,
    },
  );
  return jobs.map(toJobFacts);
}

/** The decision's view of a job, from the jobs listing or a `workflow_job` payload. */
export function toJobFacts(j: {
  id: number;
  name: string;
  conclusion?: string | null;
  steps?: { name: string; conclusion?: string | null }[] | null;
}): JobFacts {
  return {
    id: j.id,
    name: j.name,
    conclusion: j.conclusion ?? null,
    steps: (j.steps ?? []).map((s) => ({ name: s.name, conclusion: s.conclusion ?? null })),
  };
}

/**
 * A job's log text, or null when it is gone (expired, deleted, never written). The API answers with a
 * redirect to a storage host; that URL is fetched without credentials so the installation token never
 * leaves for another host.
 */
export async function fetchJobLog(octokit: InstallationOctokit, ref: RepoRef, jobId: number): Promise<string | null> {
  let response;
  try {
    response = await octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", {
      ...ref,
      job_id: jobId,
      request: { redirect: "manual" },
    });
  } catch (err) {
    if (statusOf(err) === 404 || statusOf(err) === 410) return null;
    throw err;
  }
  const location = (response.headers as Record<string, string | undefined>).location;
  if (response.status >= 300 && response.status < 400) {
    if (!location) return null;
    return downloadLog(location);
  }
  return clip(
    typeof response.data === "string" ? response.data : Buffer.from(response.data as ArrayBuffer).toString("utf8"),
  );
}

async function downloadLog(url: string): Promise<string | null> {
  try {
    return clip(await downloadWithoutAuth(url, { maxBytes: MAX_LOG_BYTES }));
  } catch (err) {
    // A 4xx means the log is gone (expired, deleted), and a huge log is not worth reading:
    // both are "unavailable", not failures worth retrying.
    if (/failed with HTTP 4\d\d|is larger than/.test((err as Error).message)) return null;
    throw err;
  }
}

function clip(text: string): string {
  return text.length > MAX_LOG_CHARS ? text.slice(text.length - MAX_LOG_CHARS) : text;
}

/**
 * Where the run's pull request (or, for other events, its branch) points now. Fork pull requests
 * carry no pull request in the run, so their currency is unknown.
 */
export async function currentHead(octokit: InstallationOctokit, ref: RepoRef, run: RunFacts): Promise<CurrentHead> {
  const pr = run.pullRequests[0];
  if (pr !== undefined) {
    const source = `pull request #${pr}`;
    try {
      const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...ref,
        pull_number: pr,
      });
      return { source, sha: data.head.sha };
    } catch (err) {
      if (statusOf(err) === 404) return { source, sha: null };
      throw err;
    }
  }
  if (run.event.startsWith("pull_request")) return forkPullHead(octokit, ref, run);
  if (!run.headBranch) return { source: "no branch", sha: undefined };
  // A merge group's run tests the group's temporary branch, deleted when the group is destroyed.
  const source = run.event === "merge_group" ? `merge group ${run.headBranch}` : `branch ${run.headBranch}`;
  try {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", {
      ...ref,
      branch: run.headBranch,
    });
    return { source, sha: data.commit.sha };
  } catch (err) {
    if (statusOf(err) === 404) return { source, sha: null };
    throw err;
  }
}

/**
 * Runs of pull requests from forks do not name their pull request: find the open pull request
 * whose head is the fork's branch.
 */
async function forkPullHead(octokit: InstallationOctokit, ref: RepoRef, run: RunFacts): Promise<CurrentHead> {
  if (!run.headOwner || !run.headBranch) return { source: "a pull request the run does not name", sha: undefined };
  const head = `${run.headOwner}:${run.headBranch}`;
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls", {
    ...ref,
    head,
    state: "open",
    per_page: 10,
  });
  if (data.length === 0) return { source: `an open pull request from ${head}`, sha: null };
  if (data.length > 1) return { source: `${data.length} open pull requests from ${head}`, sha: undefined };
  return { source: `pull request #${data[0]!.number}`, sha: data[0]!.head.sha };
}

/** The decision's facts, and the log tails kept with them for simulating another policy. */
export interface GatheredFacts {
  input: Omit<DecideInput, "policy" | "run">;
  jobs: JobFacts[];
  tails: Map<number, string | null>;
}

/** Where the facts are read: the installation's API, the store, and where the policy came from. */
export interface FactSources {
  octokit: InstallationOctokit;
  store: Store;
  adminRepo: string;
  policySources: readonly string[] | undefined;
}

/**
 * Everything `decide` needs for a completed run, read in order: the jobs, then the logs of the
 * failed jobs the rules read (scanned for their patterns; the tail kept), where the branch or
 * pull request points now, whether the policy's words may be shown, and today's re-runs.
 */
export async function gatherFacts(
  src: FactSources,
  policy: RerunPolicy,
  ref: RepoRef & { repoId: number },
  run: RunFacts,
): Promise<GatheredFacts> {
  const repo = { owner: ref.owner, repo: ref.repo };
  const jobs = await listJobs(src.octokit, repo, run.id, run.runAttempt);
  const specs = policy.rules.flatMap((r) => r.log ?? []);
  const budget = new MatchBudget();
  // The decision needs only which patterns matched; the facts kept for simulating another policy
  // need the text, of which the tail is enough (errors print last).
  const read = await fetchLogs(src.octokit, repo, logsToFetch(policy, run, jobs), async (log) => ({
    scanned: await scanLog(log, specs, budget),
    tail: log.slice(-LOG_TAIL_CHARS),
  }));
  const current = await currentHead(src.octokit, repo, run);
  const withheld = await policyWithheld(src.octokit, {
    ...repo,
    adminRepo: src.adminRepo,
    sources: src.policySources,
    fork: Boolean(run.fromFork),
  });
  const logs = new Map([...read].map(([id, r]) => [id, r && r.scanned] as const));
  const tails = new Map([...read].map(([id, r]) => [id, r && r.tail] as const));
  const used = await usedToday(src.store, ref.repoId, policy.daily_budget);
  return { input: { jobs, logs, current, usedToday: used, ...(withheld ? { withheld } : {}) }, jobs, tails };
}

/**
 * Fetch the logs the decision needs, one at a time (few jobs; keeps the rate limit calm), each turned
 * by `digest` (e.g. scanned for the policy's patterns) before the next is read, so at most one log's
 * text is held at once.
 */
export async function fetchLogs<T>(
  octokit: InstallationOctokit,
  ref: RepoRef,
  jobIds: readonly number[],
  digest: (log: string) => Promise<T>,
): Promise<Map<number, T | null>> {
  const logs = new Map<number, T | null>();
  for (const id of jobIds) {
    const log = await fetchJobLog(octokit, ref, id);
    logs.set(id, log === null ? null : await digest(log));
  }
  return logs;
}

/** One page of the branch's history is enough: the flake pattern only looks two commits either side. */
const HISTORY_RUNS = 30;

/** The commits around `run` on its branch, oldest first, each with its newest run's jobs. */
export async function branchHistory(
  octokit: InstallationOctokit,
  ref: RepoRef,
  run: RunFacts,
  repository: RepoIdentity,
): Promise<CommitRun[]> {
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
