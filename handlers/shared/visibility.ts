// Who can read what a check run, comment or status shows: everyone who can read the repository
// it is on (and, on a fork's pull request, the fork's author). Content from another repository
// (the private admin repository's policy) may appear there only when all of them can read that
// repository too.
import type { InstallationOctokit } from "../../src/index.js";
import { POLICY_FILE } from "../../src/policy/index.js";

export type Visibility = "public" | "internal" | "private";

const RANK: Record<Visibility, number> = { private: 0, internal: 1, public: 2 };

/** A repository's visibility; one Steward cannot read counts as private. */
export async function repoVisibility(octokit: InstallationOctokit, owner: string, repo: string): Promise<Visibility> {
  try {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}", { owner, repo });
    const d = data as { visibility?: string; private?: boolean };
    if (d.visibility === "public" || d.visibility === "internal" || d.visibility === "private") return d.visibility;
    return d.private === false ? "public" : "private";
  } catch (e) {
    if ((e as { status?: number }).status === 404) return "private";
    throw e;
  }
}

/**
 * Why content of a repository with visibility `source` must be withheld from a report on one with
 * visibility `shownOn`, or undefined when every reader may see it. A fork's author may read only
 * public repositories as far as Steward can tell.
 */
export function withheldBecause(source: Visibility, shownOn: Visibility, fork: boolean): string | undefined {
  if (fork && source !== "public") return `this pull request comes from a fork, and the repository is ${source}`;
  if (RANK[shownOn] > RANK[source]) return `this repository is ${shownOn} and that one is ${source}`;
  return undefined;
}

/** Visibility changes rarely: remembered a few minutes per repository, for a bounded number of them. */
const VISIBILITY_TTL_MS = 5 * 60_000;
const MAX_REMEMBERED = 1000;
const remembered = new Map<string, { at: number; value: Visibility }>();

async function rememberedVisibility(octokit: InstallationOctokit, owner: string, repo: string): Promise<Visibility> {
  const key = `${owner}/${repo}`.toLowerCase();
  const hit = remembered.get(key);
  if (hit && Date.now() - hit.at < VISIBILITY_TTL_MS) return hit.value;
  const value = await repoVisibility(octokit, owner, repo);
  remembered.delete(key);
  remembered.set(key, { at: Date.now(), value });
  while (remembered.size > MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!);
  return value;
}

const policyFiles = new Map<string, { at: number; value: boolean }>();

async function adminHasPolicy(octokit: InstallationOctokit, owner: string, adminRepo: string): Promise<boolean> {
  const key = `${owner}/${adminRepo}`.toLowerCase();
  const hit = policyFiles.get(key);
  if (hit && Date.now() - hit.at < VISIBILITY_TTL_MS) return hit.value;
  let value = true;
  try {
    await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", { owner, repo: adminRepo, path: POLICY_FILE });
  } catch (e) {
    if ((e as { status?: number }).status !== 404) throw e;
    value = false;
  }
  policyFiles.delete(key);
  policyFiles.set(key, { at: Date.now(), value });
  while (policyFiles.size > MAX_REMEMBERED) policyFiles.delete(policyFiles.keys().next().value!);
  return value;
}

/**
 * Why text from a repository's policy must be withheld from what Steward shows on it (a check run,
 * a deployment comment), or undefined: the policy merges the admin repository's file, and some
 * readers of this repository (or the fork's author) could not read that repository.
 */
export async function policyWithheld(
  octokit: InstallationOctokit,
  o: { owner: string; repo: string; adminRepo: string; sources: readonly string[] | undefined; fork?: boolean },
): Promise<string | undefined> {
  if (o.repo.toLowerCase() === o.adminRepo.toLowerCase()) return undefined;
  const adminFile = `${o.owner}/${o.adminRepo}:`.toLowerCase();
  // Unknown sources (a policy loaded for a task): merged when the admin repository has a policy file.
  const merged =
    o.sources !== undefined
      ? o.sources.some((s) => s.toLowerCase().startsWith(adminFile))
      : await adminHasPolicy(octokit, o.owner, o.adminRepo);
  if (!merged) return undefined;
  const admin = await rememberedVisibility(octokit, o.owner, o.adminRepo);
  const here = await rememberedVisibility(octokit, o.owner, o.repo);
  const reason = withheldBecause(admin, here, o.fork === true);
  return reason && `it merges the organisation's policy in ${o.owner}/${o.adminRepo}, and ${reason}`;
}
