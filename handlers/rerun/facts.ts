// API reads the re-run decision needs: the run, its jobs for one attempt, job logs, and where
// the run's pull request or branch points now.
import { downloadWithoutAuth, type InstallationOctokit } from "../../src/index.js";
import { forkOf, type RepoIdentity } from "../shared/fork.js";
import type { CurrentHead, JobFacts, RunFacts } from "./decide.js";

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
export function toRunFacts(run: ApiRun, workflow?: { name?: string; path?: string } | null, repository?: RepoIdentity): RunFacts {
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

export async function getRun(octokit: InstallationOctokit, ref: RepoRef, runId: number): Promise<ApiRun & { status: string | null }> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...ref, run_id: runId });
  return data as ApiRun & { status: string | null };
}

/** Every job of one attempt of a run (paginated). */
export async function listJobs(octokit: InstallationOctokit, ref: RepoRef, runId: number, attempt: number): Promise<JobFacts[]> {
  const jobs = await octokit.paginate("GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs", {
    ...ref,
    run_id: runId,
    attempt_number: attempt,
    per_page: 100,
  });
  return jobs.map(toJobFacts);
}

/** The decision's view of a job, from the jobs listing or a `workflow_job` payload. */
export function toJobFacts(j: { id: number; name: string; conclusion?: string | null; steps?: { name: string; conclusion?: string | null }[] | null }): JobFacts {
  return { id: j.id, name: j.name, conclusion: j.conclusion ?? null, steps: (j.steps ?? []).map((s) => ({ name: s.name, conclusion: s.conclusion ?? null })) };
}

/**
 * A job's log text, or null when it is gone (expired, deleted, never written). The API answers with a
 * redirect to a storage host; that URL is fetched without credentials so the installation token never
 * leaves for another host.
 */
export async function fetchJobLog(octokit: InstallationOctokit, ref: RepoRef, jobId: number, answered?: () => void): Promise<string | null> {
  let response;
  try {
    response = await octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", {
      ...ref,
      job_id: jobId,
      request: { redirect: "manual" },
    });
  } catch (err) {
    answered?.();
    if (statusOf(err) === 404 || statusOf(err) === 410) return null;
    throw err;
  }
  // `answered`: the API has answered (the storage host is read next, without the token).
  answered?.();
  const location = (response.headers as Record<string, string | undefined>).location;
  if (response.status >= 300 && response.status < 400) {
    if (!location) return null;
    return downloadLog(location);
  }
  return clip(typeof response.data === "string" ? response.data : Buffer.from(response.data as ArrayBuffer).toString("utf8"));
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
      const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { ...ref, pull_number: pr });
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
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", { ...ref, branch: run.headBranch });
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
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls", { ...ref, head, state: "open", per_page: 10 });
  if (data.length === 0) return { source: `an open pull request from ${head}`, sha: null };
  if (data.length > 1) return { source: `${data.length} open pull requests from ${head}`, sha: undefined };
  return { source: `pull request #${data[0]!.number}`, sha: data[0]!.head.sha };
}

/**
 * Fetch the logs the decision needs, one at a time (few jobs; keeps the rate limit calm), each turned
 * by `digest` (e.g. scanned for the policy's patterns) before the next is read, so at most one log's
 * text is held at once.
 */
export async function fetchLogs<T>(octokit: InstallationOctokit, ref: RepoRef, jobIds: readonly number[], digest: (log: string) => Promise<T>): Promise<Map<number, T | null>> {
  const logs = new Map<number, T | null>();
  for (const id of jobIds) {
    const log = await fetchJobLog(octokit, ref, id);
    logs.set(id, log === null ? null : await digest(log));
  }
  return logs;
}
