// API reads for one evaluation: the check runs on the sha, where the sha stands in earlier
// environments, and the run itself (for the ref and sha when a payload lacks them).
import type { InstallationOctokit } from "../../src/index.js";
import { cachedGet, requestFnOf, ResponseCache } from "../../src/index.js";
import { refName, refNamedBy, type CheckRunFact, type DeployedState, type Facts, type RefFacts } from "./decide.js";
import { checkEntry, type EnvironmentRule } from "./policy.js";
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

/** Check runs read for one decision at most (10 pages): past it, a pinned check not seen waits. */
const MAX_CHECK_RUNS = 1000;

/**
 * The check runs on `sha`, with the app that created each. `all`: every run, not only the latest
 * per name, so a pinned check's own newest run is seen even when another app ran that name later.
 */
async function fetchCheckRuns(
  octokit: InstallationOctokit,
  target: RepoRef,
  sha: string,
  all: boolean,
): Promise<CheckRunFact[]> {
  const out: CheckRunFact[] = [];
  const pages = octokit.paginate.iterator("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
    owner: target.owner,
    repo: target.repo,
    ref: sha,
    filter: all ? "all" : "latest",
    per_page: 100,
  });
  for await (const { data } of pages) {
    for (const r of data) {
      out.push({
        name: r.name,
        status: r.status,
        conclusion: r.conclusion ?? null,
        id: r.id,
        startedAt: r.started_at ?? null,
        ...(r.app?.slug ? { app: r.app.slug } : {}),
        ...(r.html_url ? { url: r.html_url } : {}),
      });
    }
    if (out.length >= MAX_CHECK_RUNS) break;
  }
  return out;
}

const SUCCEEDED = new Set(["success", "inactive"]); // inactive: it succeeded and a later deployment replaced it
const UNDER_WAY = new Set(["pending", "queued", "in_progress", "waiting"]);
/** Only the newest deployments of a sha to one environment matter; older ones were retried. */
const DEPLOYMENTS_LOOKED_AT = 10;

/** Where `sha` stands in `environment`: any success wins, then anything under way, then failure. */
async function fetchDeployedState(
  octokit: InstallationOctokit,
  target: RepoRef,
  sha: string,
  environment: string,
): Promise<DeployedState> {
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
export async function fetchFacts(
  octokit: InstallationOctokit,
  target: RepoRef,
  sha: string,
  rule: EnvironmentRule,
  fork?: string,
  adminRepo?: string,
  ref?: string,
): Promise<Facts> {
  const facts: Facts = { checkRuns: [], deployedTo: {} };
  if (rule.approve || fork) return facts;
  if (ref && (rule.branches || rule.tags)) {
    const refFacts = await fetchRefFacts(octokit, target, sha, ref, rule);
    if (refFacts.branch || refFacts.tag) facts.ref = refFacts;
  }
  const paths = calendarPaths(rule);
  if (paths.length && adminRepo) facts.calendars = await fetchCalendars(octokit, target.owner, adminRepo, paths);
  if (rule.checks?.length) {
    const pinned = rule.checks.some((c) => checkEntry(c).apps !== undefined);
    facts.checkRuns = await fetchCheckRuns(octokit, target, sha, pinned);
    if (pinned) facts.allCheckRuns = true;
  }
  for (const environment of rule.after ?? []) {
    facts.deployedTo[environment] = await fetchDeployedState(octokit, target, sha, environment);
  }
  return facts;
}

/** The calendar files named by the rule, from the admin repository's default branch. */
async function fetchCalendars(
  octokit: InstallationOctokit,
  owner: string,
  adminRepo: string,
  paths: readonly string[],
): Promise<CalendarTexts> {
  const out: CalendarTexts = {};
  for (const path of paths) {
    try {
      const { data } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
        owner,
        repo: adminRepo,
        path,
      });
      if (Array.isArray(data) || data.type !== "file" || !("content" in data))
        out[path] = { error: `${owner}/${adminRepo}:${path} is not a file` };
      else if (data.size > MAX_CALENDAR_BYTES)
        out[path] = { error: `it is larger than ${MAX_CALENDAR_BYTES / 1024} KB` };
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
 * Property answers kept with their ETags: every gate evaluation asks GitHub afresh (a property
 * decides which gates apply, so it is never taken from memory), and an unchanged answer is a 304,
 * which GitHub does not count against the rate limit.
 */
const propertyReads = new ResponseCache({ maxEntries: 10_000, maxBytes: 8 * 2 ** 20 });

/**
 * Custom property values of one repository (`GET /orgs/{org}/properties/values`, narrowed by
 * `repository_query` to one page). A personal account has no custom properties: 404 means none.
 */
export async function fetchPropertyValues(
  octokit: InstallationOctokit,
  target: RepoRef,
): Promise<Record<string, string | string[]>> {
  let items: {
    repository_full_name: string;
    properties: { property_name: string; value: string | string[] | null }[];
  }[];
  try {
    const { data } = await cachedGet(
      requestFnOf(octokit),
      propertyReads,
      `${target.owner}/${target.repo}`.toLowerCase(),
      "GET /orgs/{org}/properties/values",
      { org: target.owner, repository_query: `repo:${target.owner}/${target.repo}`, per_page: 100 },
    );
    items = Array.isArray(data) ? (data as typeof items) : [];
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

/**
 * Answers about refs, per (repository, branch or tag, sha), kept a little while: a decision and
 * its re-evaluations ask the same. Being on a branch lasts (unless the branch is rewritten), so it
 * is kept longer than not being on it (the branch may yet reach the sha). Bounded: the oldest goes.
 */
const refCache = new Map<
  string,
  { value: NonNullable<RefFacts["branch"]> | NonNullable<RefFacts["tag"]>; expires: number }
>();
const REF_CACHE_ENTRIES = 2000;
const ON_REF_MS = 10 * 60_000;
const OFF_REF_MS = 30_000;

async function cached<T extends NonNullable<RefFacts["branch"]> | NonNullable<RefFacts["tag"]>>(
  key: string,
  lasting: (v: T) => boolean,
  read: () => Promise<T>,
): Promise<T> {
  const hit = refCache.get(key);
  if (hit && hit.expires > Date.now()) return hit.value as T;
  const value = await read();
  refCache.delete(key);
  if (refCache.size >= REF_CACHE_ENTRIES) refCache.delete(refCache.keys().next().value!);
  refCache.set(key, { value, expires: Date.now() + (lasting(value) ? ON_REF_MS : OFF_REF_MS) });
  return value;
}

const statusOf = (error: unknown) => (error as { status?: unknown }).status;

/** The commit a ref (`heads/main`, `tags/v1`) points at, peeling an annotated tag; undefined when there is no such ref. */
async function refTarget(octokit: InstallationOctokit, target: RepoRef, ref: string): Promise<string | undefined> {
  try {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      owner: target.owner,
      repo: target.repo,
      ref,
    });
    if (data.object.type !== "tag") return data.object.sha;
    const { data: tag } = await octokit.request("GET /repos/{owner}/{repo}/git/tags/{tag_sha}", {
      owner: target.owner,
      repo: target.repo,
      tag_sha: data.object.sha,
    });
    return tag.object.sha;
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

/**
 * Where `sha` stands on the branch and/or tag `ref` names, for the rule's globs that match it.
 * A sha is on a branch when it is the tip, or the compare API says the sha is `behind` the tip
 * (reachable from it) or `identical`. A ref under refs/tags/ is never looked up as a branch.
 */
async function fetchRefFacts(
  octokit: InstallationOctokit,
  target: RepoRef,
  sha: string,
  ref: string,
  rule: EnvironmentRule,
): Promise<RefFacts> {
  const out: RefFacts = {};
  const name = refName(ref);
  const repoKey = `${target.owner}/${target.repo}`.toLowerCase();
  const named = refNamedBy(rule, ref);
  if (named.branch) {
    out.branch = await cached(
      `${repoKey}:heads/${name}:${sha}`,
      (b) => b.state === "tip" || b.state === "reachable",
      async () => {
        const tip = await refTarget(octokit, target, `heads/${name}`);
        if (!tip) return { name, state: "missing" as const };
        if (tip === sha) return { name, state: "tip" as const };
        try {
          const { data } = await octokit.request("GET /repos/{owner}/{repo}/compare/{basehead}", {
            owner: target.owner,
            repo: target.repo,
            basehead: `${tip}...${sha}`,
            per_page: 1,
          });
          const on = data.status === "behind" || data.status === "identical";
          return { name, state: on ? ("reachable" as const) : ("off" as const), status: data.status };
        } catch (error) {
          // No common history, or a sha the repository does not have: not on the branch.
          if (statusOf(error) === 404) return { name, state: "off" as const, status: "no common history" };
          throw error;
        }
      },
    );
  }
  if (named.tag) {
    out.tag = await cached(
      `${repoKey}:tags/${name}:${sha}`,
      (t) => t.state === "at",
      async () => {
        const at = await refTarget(octokit, target, `tags/${name}`);
        return { name, state: !at ? ("missing" as const) : at === sha ? ("at" as const) : ("elsewhere" as const) };
      },
    );
  }
  return out;
}
