// API reads for one evaluation: the check runs on the sha, where the sha stands in earlier
// environments, and the run itself (for the ref and sha when a payload lacks them).
import type { InstallationOctokit } from "../../src/index.js";
import type { CheckRunFact, DeployedState, Facts } from "./decide.js";
import type { EnvironmentRule } from "./policy.js";
import { forkOf } from "../shared/fork.js";
import { calendarPaths, type CalendarTexts } from "./timetable.js";
import { MAX_CALENDAR_BYTES } from "./recurrence.js";

export interface RepoRef {
  owner: string;
  repo: string;
}

export interface RunFacts {
  headSha: string;
  headBranch: string | undefined;
  status: string;
  createdAt: string | undefined;
  /** `owner/name` of the fork whose code the run runs; null for the repository's own code; undefined if the answer cannot tell. */
  fork: string | null | undefined;
}

/** The workflow run a deployment belongs to. */
export async function fetchRun(octokit: InstallationOctokit, target: RepoRef & { runId: number }): Promise<RunFacts> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
    owner: target.owner,
    repo: target.repo,
    run_id: target.runId,
  });
  return {
    headSha: data.head_sha,
    headBranch: data.head_branch ?? undefined,
    status: data.status ?? "unknown",
    createdAt: data.created_at,
    fork: forkOf(data.head_repository, data.repository),
  };
}

async function fetchCheckRuns(octokit: InstallationOctokit, target: RepoRef, sha: string): Promise<CheckRunFact[]> {
  const runs = await octokit.paginate("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
    owner: target.owner,
    repo: target.repo,
    ref: sha,
    filter: "latest",
    per_page: 100,
  });
  return runs.map((r) => ({ name: r.name, status: r.status, conclusion: r.conclusion ?? null }));
}

const SUCCEEDED = new Set(["success", "inactive"]); // inactive: it succeeded and a later deployment replaced it
const UNDER_WAY = new Set(["pending", "queued", "in_progress", "waiting"]);
/** Only the newest deployments of a sha to one environment matter; older ones were retried. */
const DEPLOYMENTS_LOOKED_AT = 10;

/** Where `sha` stands in `environment`: any success wins, then anything under way, then failure. */
async function fetchDeployedState(octokit: InstallationOctokit, target: RepoRef, sha: string, environment: string): Promise<DeployedState> {
  const { data: deployments } = await octokit.request("GET /repos/{owner}/{repo}/deployments", {
    owner: target.owner,
    repo: target.repo,
    sha,
    environment,
    per_page: DEPLOYMENTS_LOOKED_AT,
  });
  if (deployments.length === 0) return "missing";
  const states: string[] = [];
  for (const deployment of deployments) {
    const { data: statuses } = await octokit.request("GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses", {
      owner: target.owner,
      repo: target.repo,
      deployment_id: Number(deployment.id),
      per_page: 1,
    });
    // A deployment without statuses has been created but not started: it is under way.
    states.push(statuses[0]?.state ?? "pending");
  }
  if (states.some((s) => SUCCEEDED.has(s))) return "success";
  if (states.some((s) => UNDER_WAY.has(s))) return "pending";
  return "failure";
}

/**
 * Everything the rule needs to be evaluated, fetched once; nothing the rule does not use. A fork's
 * code is rejected whatever the facts, so nothing is read for it.
 */
export async function fetchFacts(octokit: InstallationOctokit, target: RepoRef, sha: string, rule: EnvironmentRule, fork?: string, adminRepo?: string): Promise<Facts> {
  const facts: Facts = { checkRuns: [], deployedTo: {} };
  if (rule.approve || fork) return facts;
  const paths = calendarPaths(rule);
  if (paths.length && adminRepo) facts.calendars = await fetchCalendars(octokit, target.owner, adminRepo, paths);
  if (rule.checks?.length) facts.checkRuns = await fetchCheckRuns(octokit, target, sha);
  for (const environment of rule.after ?? []) {
    facts.deployedTo[environment] = await fetchDeployedState(octokit, target, sha, environment);
  }
  return facts;
}

/** The calendar files named by the rule, from the admin repository's default branch. */
async function fetchCalendars(octokit: InstallationOctokit, owner: string, adminRepo: string, paths: readonly string[]): Promise<CalendarTexts> {
  const out: CalendarTexts = {};
  for (const path of paths) {
    try {
      const { data } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", { owner, repo: adminRepo, path });
      if (Array.isArray(data) || data.type !== "file" || !("content" in data)) out[path] = { error: `${owner}/${adminRepo}:${path} is not a file` };
      else if (data.size > MAX_CALENDAR_BYTES) out[path] = { error: `it is larger than ${MAX_CALENDAR_BYTES / 1024} KB` };
      else out[path] = { text: Buffer.from(data.content, "base64").toString("utf8") };
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 404) out[path] = { error: `${owner}/${adminRepo}:${path} does not exist` };
      else throw error;
    }
  }
  return out;
}

/**
 * Custom property values of one repository (`GET /orgs/{org}/properties/values`, narrowed by
 * `repository_query`). A personal account has no custom properties: 404 means none.
 */
export async function fetchPropertyValues(octokit: InstallationOctokit, target: RepoRef): Promise<Record<string, string | string[]>> {
  let items: { repository_full_name: string; properties: { property_name: string; value: string | string[] | null }[] }[];
  try {
    items = await octokit.paginate("GET /orgs/{org}/properties/values", { org: target.owner, repository_query: `repo:${target.owner}/${target.repo}`, per_page: 100 });
  } catch (error) {
    if ((error as { status?: unknown }).status === 404) return {};
    throw error;
  }
  const full = `${target.owner}/${target.repo}`.toLowerCase();
  const mine = items.find((i) => i.repository_full_name.toLowerCase() === full);
  const out: Record<string, string | string[]> = {};
  for (const p of mine?.properties ?? []) if (p.value !== null) out[p.property_name] = p.value;
  return out;
}
