// Who can read what a check run, comment or status shows: everyone who can read the repository
// it is on (and, on a fork's pull request, the fork's author). Content from another repository
// (the private admin repository's policy) may appear there only when all of them can read that
// repository too.
import { cachedGet, requestFnOf, ResponseCache, type InstallationOctokit } from "../../src/index.js";
import { POLICY_FILE } from "../../src/policy/index.js";

export type Visibility = "public" | "internal" | "private";

const RANK: Record<Visibility, number> = { private: 0, internal: 1, public: 2 };

/**
 * Repository and policy-file answers kept with their ETags. Visibility is read afresh for every
 * report (it decides what the public may see, so it is never taken from memory), but a read whose
 * ETag still matches is answered 304, which GitHub does not count against the rate limit.
 */
const reads = new ResponseCache({ maxEntries: 5_000, maxBytes: 16 * 2 ** 20 });

/** A repository's visibility as GitHub says it now; one Steward cannot read counts as private. */
export async function repoVisibility(octokit: InstallationOctokit, owner: string, repo: string): Promise<Visibility> {
  try {
    const { data } = await cachedGet(
      requestFnOf(octokit),
      reads,
      `repo:${owner}/${repo}`.toLowerCase(),
      "GET /repos/{owner}/{repo}",
      {
        owner,
        repo,
      },
    );
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

/** A missing admin policy file (a 404 has no ETag to ask with) is remembered this long per organisation. */
const MISSING_MS = 5 * 60_000;
const missing = new Map<string, number>();

async function adminHasPolicy(octokit: InstallationOctokit, owner: string, adminRepo: string): Promise<boolean> {
  const key = `policy:${owner}/${adminRepo}`.toLowerCase();
  if ((missing.get(key) ?? 0) > Date.now()) return false;
  try {
    await cachedGet(requestFnOf(octokit), reads, key, "GET /repos/{owner}/{repo}/contents/{path}", {
      owner,
      repo: adminRepo,
      path: POLICY_FILE,
    });
    missing.delete(key);
    return true;
  } catch (e) {
    if ((e as { status?: number }).status !== 404) throw e;
    missing.delete(key);
    missing.set(key, Date.now() + MISSING_MS);
    while (missing.size > 1000) missing.delete(missing.keys().next().value!);
    return false;
  }
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
  const admin = await repoVisibility(octokit, o.owner, o.adminRepo);
  const here = await repoVisibility(octokit, o.owner, o.repo);
  const reason = withheldBecause(admin, here, o.fork === true);
  return reason && `it merges the organisation's policy in ${o.owner}/${o.adminRepo}, and ${reason}`;
}
