// Releases through Octokit against the running hub: drafts (seen only with push access),
// publishing, latest, tags, validation, webhooks, and the installation's `contents` permission.
import { describe, expect, it } from "vitest";
import { createWithNothing, outcome, worldPerTest } from "./domain-helpers.js";
import { installationToken, startHub, tokenOctokit } from "./core-helpers.js";

const world = worldPerTest();

const repo = { owner: "acme", repo: "web" };

describe("releases", () => {
  it("creates a draft, lists it for a writer only, publishes it, and serves it as latest and by tag", async () => {
    const { data: draft, status } = await world().octokit.rest.repos.createRelease({
      ...repo,
      tag_name: "v1.0.0",
      name: "v1.0.0",
      body: "notes",
      draft: true,
    });
    expect(status).toBe(201);
    expect(draft).toMatchObject({
      tag_name: "v1.0.0",
      draft: true,
      published_at: null,
      target_commitish: "main",
      body: "notes",
    });
    expect((await outcome(world().octokit.rest.repos.getLatestRelease(repo))).status).toBe(404);
    expect((await world().octokit.rest.repos.listReleases(repo)).data.map((r) => r.id)).toEqual([draft.id]);
    // Callers without push access (a user outside the organisation) never see drafts.
    expect((await world().userOctokit("contributor").rest.repos.listReleases(repo)).data).toEqual([]);
    expect((await world().userOctokit("dev-dana").rest.repos.listReleases(repo)).data.map((r) => r.id)).toEqual([
      draft.id,
    ]);

    const { data: published } = await world().octokit.rest.repos.updateRelease({
      ...repo,
      release_id: draft.id,
      draft: false,
      body: "final notes",
    });
    expect(published).toMatchObject({ draft: false, body: "final notes" });
    expect(published.published_at).not.toBeNull();
    expect((await world().octokit.rest.repos.getLatestRelease(repo)).data.id).toBe(draft.id);
    expect((await world().octokit.rest.repos.getReleaseByTag({ ...repo, tag: "v1.0.0" })).data.id).toBe(draft.id);

    await world().settle();
    expect(
      world()
        .deliveries("release")
        .map((d) => d.action),
    ).toEqual(["created", "edited", "published"]);
    expect(world().deliveries("release", "edited")[0]!.payload.changes).toEqual({ body: { from: "notes" } });
  });

  it("answers 422 for a missing tag, a taken tag and an unknown target; 404 for an unknown release", async () => {
    expect(await createWithNothing(world(), "POST /repos/{owner}/{repo}/releases")).toEqual({
      status: 422,
      errors: [{ resource: "Release", field: "tag_name", code: "missing_field" }],
    });
    await world().octokit.rest.repos.createRelease({ ...repo, tag_name: "v1" });
    const taken = await outcome(world().octokit.rest.repos.createRelease({ ...repo, tag_name: "v1" }));
    expect(taken.status).toBe(422);
    expect(taken.data.errors[0]).toMatchObject({ field: "tag_name", code: "already_exists" });
    const target = await outcome(
      world().octokit.rest.repos.createRelease({ ...repo, tag_name: "v2", target_commitish: "no-such-branch" }),
    );
    expect(target.status).toBe(422);
    expect((await outcome(world().octokit.rest.repos.getRelease({ ...repo, release_id: 999_999 }))).status).toBe(404);
    const { data: r } = await world().octokit.rest.repos.createRelease({ ...repo, tag_name: "v3", prerelease: true });
    // A pre-release is never "latest".
    expect((await world().octokit.rest.repos.getLatestRelease(repo)).data.tag_name).toBe("v1");
    expect((await world().octokit.rest.repos.deleteRelease({ ...repo, release_id: r.id })).status).toBe(204);
    expect((await outcome(world().octokit.rest.repos.getRelease({ ...repo, release_id: r.id }))).status).toBe(404);
  });
});

describe("releases and the installation's permissions", () => {
  it("refuses to create with contents: read and hides drafts from it", async () => {
    const hub = await startHub({ app: { permissions: { contents: "read", metadata: "read" }, events: [] } });
    try {
      const octokit = tokenOctokit(hub, await installationToken(hub, hub.control.installation("acme")!.id));
      const refused = await outcome(octokit.rest.repos.createRelease({ ...repo, tag_name: "v1", draft: true }));
      expect(refused).toMatchObject({ status: 403, message: "Resource not accessible by integration" });
      expect((await octokit.rest.repos.listReleases(repo)).data).toEqual([]);
    } finally {
      await hub.close();
    }
  });
});
