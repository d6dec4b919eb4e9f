// A merge group (`merge_group.checks_requested`) as the pull request it tests. GitHub names the group's
// temporary branch `gh-readonly-queue/{base}/pr-{number}-{base sha}`: the pull request whose checks the
// group's head commit must pass. Handlers that report on a pull request's head report the same check on
// the group's head, so a required Steward check does not hold the queue up.
import type { InstallationOctokit } from "../../src/index.js";

export interface MergeGroupFacts {
  owner: string;
  repo: string;
  /** The pull request the group's branch names. */
  number: number;
  headSha: string;
  baseSha: string;
  /** Base branch name (no `refs/heads/`). */
  baseRef: string;
}

interface Payload {
  action?: string;
  merge_group?: { head_sha: string; head_ref: string; base_sha: string; base_ref: string };
  repository?: { name: string; owner: { login: string } };
}

const GROUP_REF = /^refs\/heads\/gh-readonly-queue\/(.+)\/pr-(\d+)-[0-9a-f]{40}$/;

/** The group's facts, or why the delivery is not one to report on. Pure. */
export function mergeGroupOf(payload: Payload): MergeGroupFacts | { skip: string } {
  if (payload.action !== "checks_requested") return { skip: `merge_group.${payload.action} is not a checks request` };
  const group = payload.merge_group;
  if (!group || !payload.repository) return { skip: "merge_group delivery without a group or repository" };
  const m = GROUP_REF.exec(group.head_ref);
  if (!m) return { skip: `merge group ref ${group.head_ref} names no pull request` };
  return {
    owner: payload.repository.owner.login,
    repo: payload.repository.name,
    number: Number(m[2]),
    headSha: group.head_sha,
    baseSha: group.base_sha,
    baseRef: group.base_ref.replace(/^refs\/heads\//, ""),
  };
}

export interface GroupPull {
  number: number;
  head: { sha: string; ref: string; repo: { id?: number; full_name?: string } | null };
  base: { sha?: string; ref: string; repo?: { id?: number; full_name?: string } | null };
}

/** The pull request the group names, as the API returns it (its head repository tells a fork). */
export async function groupPull(octokit: InstallationOctokit, group: MergeGroupFacts): Promise<GroupPull> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
    owner: group.owner,
    repo: group.repo,
    pull_number: group.number,
  });
  return data as unknown as GroupPull;
}
