// The files a pull request changes under `.github/` (handlers/shared/pull-files.ts), listed from
// the sandbox hub: only those are kept, every page is read, and a pull request whose two commits
// are known is listed once per installation client until a push moves its head.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changedGithubFiles } from "../../../handlers/shared/pull-files.js";
import { startHubClient, type HubClient } from "../../support/hub-client.js";

let gh: HubClient;
beforeAll(async () => void (gh = await startHubClient()));
afterAll(() => gh?.close());

const listings = () => gh.sent.filter((r) => r.method === "GET" && /\/pulls\/\d+\/files$/.test(r.path)).length;

async function openWith(files: Record<string, string>) {
  const pr = gh.hub.control.openPullRequest({
    owner: "acme",
    repo: "web",
    head: `change-${Object.keys(files).length}-${Date.now()}`,
    title: "A change",
    files,
  });
  const { data } = await gh.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
    owner: "acme",
    repo: "web",
    pull_number: pr.number,
  });
  return {
    owner: "acme",
    repo: "web",
    number: pr.number,
    headSha: data.head.sha as string,
    baseSha: data.base.sha as string,
  };
}

describe("changedGithubFiles", () => {
  it("reads every page, keeps only what is under .github/, and lists a pull request once for the same two commits", async () => {
    const many = Object.fromEntries(
      Array.from({ length: 150 }, (_, i) => [`src/file-${String(i).padStart(3, "0")}.ts`, `export const n = ${i};\n`]),
    );
    const pull = await openWith({
      ...many,
      ".github/steward.yml": "rerun:\n  enabled: true\n",
      "docs/readme.md": "hello\n",
    });
    const before = listings();
    const files = await changedGithubFiles(gh.octokit, pull);
    expect(files).toEqual([{ filename: ".github/steward.yml", status: "added" }]);
    expect(listings() - before).toBe(2); // 152 files: two pages of 100
    // The same commits again (check_suite.requested after pull_request.synchronize): no request.
    expect(await changedGithubFiles(gh.octokit, pull)).toEqual(files);
    expect(listings() - before).toBe(2);

    // A push moves the head: a new pair of commits, listed again, and the new file is there.
    const { sha } = gh.hub.control.pushToPullRequest({
      owner: "acme",
      repo: "web",
      number: pull.number,
      files: { ".github/steward/secrets.yml": "secrets: {}\n" },
    });
    const moved = await changedGithubFiles(gh.octokit, { ...pull, headSha: sha });
    expect(moved.map((f) => f.filename).sort()).toEqual([".github/steward.yml", ".github/steward/secrets.yml"]);
    expect(listings() - before).toBe(4);
  });

  it("lists once for concurrent asks about the same two commits, and each caller gets the answer", async () => {
    const pull = await openWith({ ".github/steward.yml": "checks:\n  config: true\n", "src/a.ts": "a\n" });
    const before = listings();
    const answers = await Promise.all([1, 2, 3, 4].map(() => changedGithubFiles(gh.octokit, pull)));
    for (const a of answers) expect(a).toEqual([{ filename: ".github/steward.yml", status: "added" }]);
    expect(listings() - before).toBe(1);
  });

  it("lets a failed listing go: the next ask lists again", async () => {
    const pull = await openWith({ ".github/steward.yml": "checks:\n  config: true\n" });
    const before = listings();
    gh.hub.control.setFault("/repos/{owner}/{repo}/pulls/{pull_number}/files", { status: 502, times: 1 });
    await expect(changedGithubFiles(gh.octokit, pull)).rejects.toMatchObject({ status: 502 });
    expect(await changedGithubFiles(gh.octokit, pull)).toEqual([{ filename: ".github/steward.yml", status: "added" }]);
    expect(listings() - before).toBe(2);
  });

  it("lists again each time when a commit is not known (nothing to key the answer by)", async () => {
    const pull = await openWith({ ".github/steward.yml": "checks:\n  config: true\n" });
    const before = listings();
    const { headSha: _head, ...withoutHead } = pull;
    await changedGithubFiles(gh.octokit, withoutHead);
    await changedGithubFiles(gh.octokit, withoutHead);
    expect(listings() - before).toBe(2);
  });
});
