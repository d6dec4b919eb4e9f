// Contents writes and commit statuses through Octokit against the running hub.
import { describe, expect, it } from "vitest";
import { outcome, worldPerTest } from "./domain-helpers.js";
import { installationToken, startHub, tokenOctokit } from "./core-helpers.js";

const world = worldPerTest();

const repo = { owner: "acme", repo: "web" };
const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("PUT/DELETE /repos/{owner}/{repo}/contents/{path}", () => {
  it("creates (201), updates with the current sha (200), refuses a stale (409) or missing (422) sha, and deletes", async () => {
    const created = await world().octokit.rest.repos.createOrUpdateFileContents({
      ...repo,
      path: "docs/a.md",
      message: "Add a",
      content: b64("one\n"),
    });
    expect(created.status).toBe(201);
    expect(created.data.content).toMatchObject({ path: "docs/a.md", name: "a.md", type: "file", size: 4 });
    expect(world().hub.control.readFile("acme", "web", "docs/a.md")).toBe("one\n");
    const sha = created.data.content!.sha!;
    expect((await world().octokit.rest.repos.getContent({ ...repo, path: "docs/a.md" })).data).toMatchObject({ sha });

    const noSha = await outcome(
      world().octokit.rest.repos.createOrUpdateFileContents({
        ...repo,
        path: "docs/a.md",
        message: "Change a",
        content: b64("two\n"),
      }),
    );
    expect(noSha).toMatchObject({ status: 422, message: 'Invalid request.\n\n"sha" wasn\'t supplied.' });
    const stale = await outcome(
      world().octokit.rest.repos.createOrUpdateFileContents({
        ...repo,
        path: "docs/a.md",
        message: "Change a",
        content: b64("two\n"),
        sha: "0".repeat(40),
      }),
    );
    expect(stale).toMatchObject({ status: 409, message: `docs/a.md does not match ${"0".repeat(40)}` });

    const updated = await world().octokit.rest.repos.createOrUpdateFileContents({
      ...repo,
      path: "docs/a.md",
      message: "Change a",
      content: b64("two\n"),
      sha,
    });
    expect(updated.status).toBe(200);
    expect(updated.data.commit.message).toBe("Change a");
    expect(world().hub.control.readFile("acme", "web", "docs/a.md")).toBe("two\n");

    const removed = await world().octokit.rest.repos.deleteFile({
      ...repo,
      path: "docs/a.md",
      message: "Remove a",
      sha: updated.data.content!.sha!,
    });
    expect(removed.data.content).toBeNull();
    expect(world().hub.control.readFile("acme", "web", "docs/a.md")).toBeUndefined();
    expect(
      (await outcome(world().octokit.rest.repos.deleteFile({ ...repo, path: "docs/a.md", message: "Again", sha })))
        .status,
    ).toBe(404);

    await world().settle();
    // Each write is a push by the app's bot.
    expect(
      world()
        .deliveries("push")
        .map((d) => d.payload.head_commit.message),
    ).toEqual(["Add a", "Change a", "Remove a"]);
  });

  it("answers 422 without a message, 404 for an unknown branch", async () => {
    expect(
      (
        await outcome(
          world().octokit.request("PUT /repos/{owner}/{repo}/contents/{path}", {
            ...repo,
            path: "x.txt",
            content: b64("x"),
          } as never),
        )
      ).status,
    ).toBe(422);
    const branch = await outcome(
      world().octokit.rest.repos.createOrUpdateFileContents({
        ...repo,
        path: "x.txt",
        message: "x",
        content: b64("x"),
        branch: "nope",
      }),
    );
    expect(branch).toMatchObject({ status: 404, message: "Branch nope not found" });
  });

  it("needs contents: write", async () => {
    const hub = await startHub({
      app: { permissions: { contents: "read", statuses: "read", metadata: "read" }, events: [] },
    });
    try {
      const octokit = tokenOctokit(hub, await installationToken(hub, hub.control.installation("acme")!.id));
      expect(
        (
          await outcome(
            octokit.rest.repos.createOrUpdateFileContents({ ...repo, path: "x.txt", message: "x", content: b64("x") }),
          )
        ).status,
      ).toBe(403);
      const sha = hub.control.pushFiles({ ...repo, files: { "y.txt": "y\n" } }).sha;
      expect((await outcome(octokit.rest.repos.createCommitStatus({ ...repo, sha, state: "success" }))).status).toBe(
        403,
      );
    } finally {
      await hub.close();
    }
  });
});

describe("commit statuses", () => {
  it("creates statuses and combines the latest per context", async () => {
    const { sha } = world().hub.control.pushFiles({ ...repo, files: { "s.txt": "s\n" } });
    expect((await world().octokit.rest.repos.getCombinedStatusForRef({ ...repo, ref: sha })).data).toMatchObject({
      state: "pending",
      total_count: 0,
    });
    const ci = await world().octokit.rest.repos.createCommitStatus({
      ...repo,
      sha,
      state: "pending",
      context: "ci",
      description: "running",
    });
    expect(ci.status).toBe(201);
    expect(ci.data).toMatchObject({ state: "pending", context: "ci", description: "running" });
    await world().octokit.rest.repos.createCommitStatus({ ...repo, sha, state: "success", context: "ci" });
    await world().octokit.rest.repos.createCommitStatus({
      ...repo,
      sha,
      state: "success",
      target_url: "http://127.0.0.1/x",
    });
    const combined = (await world().octokit.rest.repos.getCombinedStatusForRef({ ...repo, ref: "main" })).data;
    expect(combined).toMatchObject({ state: "success", sha, total_count: 2 });
    expect(combined.statuses.map((s) => [s.context, s.state])).toEqual([
      ["default", "success"],
      ["ci", "success"],
    ]);
    await world().octokit.rest.repos.createCommitStatus({ ...repo, sha, state: "failure", context: "lint" });
    expect((await world().octokit.rest.repos.getCombinedStatusForRef({ ...repo, ref: sha })).data.state).toBe(
      "failure",
    );
    expect(
      (await world().octokit.rest.repos.listCommitStatusesForRef({ ...repo, ref: sha })).data.map((s) => s.state),
    ).toEqual(["failure", "success", "success", "pending"]);
    await world().settle();
    expect(
      world()
        .deliveries("status")
        .map((d) => [d.payload.context, d.payload.state]),
    ).toEqual([
      ["ci", "pending"],
      ["ci", "success"],
      ["default", "success"],
      ["lint", "failure"],
    ]);
  });

  it("answers 422 for an unknown sha or state", async () => {
    const unknown = await outcome(
      world().octokit.rest.repos.createCommitStatus({ ...repo, sha: "f".repeat(40), state: "success" }),
    );
    expect(unknown).toMatchObject({ status: 422, message: `No commit found for SHA: ${"f".repeat(40)}` });
    const { sha } = world().hub.control.pushFiles({ ...repo, files: { "t.txt": "t\n" } });
    const bad = await outcome(
      world().octokit.request("POST /repos/{owner}/{repo}/statuses/{sha}", { ...repo, sha, state: "great" } as never),
    );
    expect(bad.status).toBe(422);
    expect(bad.data.errors[0]).toMatchObject({ field: "state" });
  });
});
