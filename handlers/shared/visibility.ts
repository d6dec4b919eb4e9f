// Who can read what a check run, comment or status shows: everyone who can read the repository
// it is on (and, on a fork's pull request, the fork's author). Content from another repository
// (the private admin repository's policy) may appear there only when all of them can read that
// repository too.
import type { InstallationOctokit } from "../../src/handler.js";

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
