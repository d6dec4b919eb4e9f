// GET /repos/{owner}/{repo}/compare/{basehead} through Octokit against the running hub: where a
// head stands relative to a base, as GitHub answers it.
import { describe, expect, it } from "vitest";
import { outcome, worldPerTest } from "./domain-helpers.js";

const world = worldPerTest();
const repo = { owner: "acme", repo: "web" };

describe("GET /repos/{owner}/{repo}/compare/{basehead}", () => {
  it("answers identical, ahead, behind and diverged with counts, the merge base and the head's commits", async () => {
    const { control } = world().hub;
    const fork = control.pushFiles({ ...repo, files: { "a.txt": "1\n" }, message: "main 1" }).sha;
    const side = control.pushFiles({
      ...repo,
      branch: "feature/x",
      from: "main",
      files: { "b.txt": "side\n" },
      message: "side 1",
    }).sha;
    const compare = async (basehead: string) =>
      (await world().octokit.rest.repos.compareCommitsWithBasehead({ ...repo, basehead })).data;

    expect(await compare("main...main")).toMatchObject({
      status: "identical",
      ahead_by: 0,
      behind_by: 0,
      total_commits: 0,
      commits: [],
    });
    const ahead = await compare("main...feature/x");
    expect(ahead).toMatchObject({
      status: "ahead",
      ahead_by: 1,
      behind_by: 0,
      base_commit: { sha: fork },
      merge_base_commit: { sha: fork },
    });
    expect(ahead.commits.map((c) => c.commit.message)).toEqual(["side 1"]);
    expect(ahead.files!.map((f) => [f.filename, f.status])).toEqual([["b.txt", "added"]]);
    // A commit reachable from the branch: `behind` (by sha, as the deployments handler asks).
    expect(await compare(`feature/x...${fork}`)).toMatchObject({ status: "behind", ahead_by: 0, behind_by: 1 });

    const main2 = control.pushFiles({ ...repo, files: { "a.txt": "2\n" }, message: "main 2" }).sha;
    expect(await compare(`main...${side}`)).toMatchObject({
      status: "diverged",
      ahead_by: 1,
      behind_by: 1,
      base_commit: { sha: main2 },
      merge_base_commit: { sha: fork },
    });
    expect(await compare(`${side}...main`)).toMatchObject({ status: "diverged", ahead_by: 1, behind_by: 1 });
  });

  it("answers 404 for an unknown ref or a malformed basehead", async () => {
    expect(
      (await outcome(world().octokit.rest.repos.compareCommitsWithBasehead({ ...repo, basehead: "main...nope" })))
        .status,
    ).toBe(404);
    expect(
      (await outcome(world().octokit.rest.repos.compareCommitsWithBasehead({ ...repo, basehead: "main" }))).status,
    ).toBe(404);
  });
});
