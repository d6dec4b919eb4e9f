// A pull request's changed files name a file moved unchanged as `renamed` with its
// `previous_filename`, as GitHub does, instead of a removal and an addition.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { installationToken, startHub, tokenOctokit } from "./core-helpers.js";

describe("pull request files: renames", () => {
  let hub: HubHandle;
  let octokit: ReturnType<typeof tokenOctokit>;
  beforeAll(async () => {
    hub = await startHub();
    octokit = tokenOctokit(hub, await installationToken(hub, hub.control.installation("acme")!.id));
  });
  afterAll(() => hub.close());

  it("pairs a removed file with an added one of the same content; a changed move stays a removal and an addition", async () => {
    hub.control.pushFiles({
      owner: "acme",
      repo: "web",
      files: { "old/name.yml": "a: 1\n", "keep.txt": "k\n", "edit.txt": "e\n" },
    });
    const pr = hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "move-files",
      files: { "old/name.yml": null, "new/name.yaml": "a: 1\n", "edit.txt": null, "edited.txt": "e, changed\n" },
    });
    const { data: files } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      owner: "acme",
      repo: "web",
      pull_number: pr.number,
    });
    const byName = Object.fromEntries(
      files.map((f) => [f.filename, { status: f.status, previous_filename: f.previous_filename ?? null }]),
    );
    expect(byName).toEqual({
      "new/name.yaml": { status: "renamed", previous_filename: "old/name.yml" },
      "edit.txt": { status: "removed", previous_filename: null },
      "edited.txt": { status: "added", previous_filename: null },
    });
    const { data: pull } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      owner: "acme",
      repo: "web",
      pull_number: pr.number,
    });
    expect(pull.changed_files).toBe(3);
  });
});
