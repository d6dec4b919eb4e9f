// The answers of routes whose renderers live in their area's json.ts and whose lookups share one
// helper: git branches, refs and blobs (found or 404), issue labels and comments (links in the
// caller's spelling), and re-requesting a check suite (only by the app that created it).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcome, startWorld, type World } from "./domain-helpers.js";

describe("hub objects rendered from their area's json.ts", () => {
  let w: World;
  let sha: string;
  const repo = { owner: "acme", repo: "api" };
  const text = "line one\nline two\n";

  beforeAll(async () => {
    w = await startWorld();
    sha = w.hub.control.pushFiles({ ...repo, branch: "main", files: { "docs/notes.txt": text } }).sha;
  });
  afterAll(() => w.close());

  it("lists and gets a branch and its ref; an unknown one is 404", async () => {
    const list = (await w.octokit.request("GET /repos/{owner}/{repo}/branches", repo)).data;
    expect(list.find((b) => b.name === "main")).toEqual({
      name: "main",
      commit: { sha, url: `${w.hub.url}/repos/acme/api/commits/${sha}` },
      protected: false,
    });
    const branch = await w.octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", { ...repo, branch: "main" });
    expect(branch.data).toMatchObject({
      name: "main",
      commit: { sha },
      protected: false,
      _links: { self: `${w.hub.url}/repos/acme/api/branches/main` },
    });
    const ref = await w.octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...repo, ref: "heads/main" });
    expect(ref.data).toMatchObject({ ref: "refs/heads/main", object: { sha, type: "commit" } });
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", { ...repo, branch: "no-such-branch" }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...repo, ref: "heads/no-such-branch" }),
        )
      ).status,
    ).toBe(404);
    expect(
      (await outcome(w.octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...repo, ref: "notes/main" })))
        .status,
    ).toBe(404);
  });

  it("gets a file's blob in base64 by the sha the contents API gives; an unknown sha is 404", async () => {
    const file = (
      await w.octokit.request("GET /repos/{owner}/{repo}/contents/{path}", { ...repo, path: "docs/notes.txt" })
    ).data as { sha: string };
    const blob = (
      await w.octokit.request("GET /repos/{owner}/{repo}/git/blobs/{file_sha}", { ...repo, file_sha: file.sha })
    ).data;
    expect(blob).toMatchObject({
      sha: file.sha,
      size: Buffer.byteLength(text),
      encoding: "base64",
      url: `${w.hub.url}/repos/acme/api/git/blobs/${file.sha}`,
    });
    expect(Buffer.from(blob.content, "base64").toString()).toBe(text);
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/git/blobs/{file_sha}", { ...repo, file_sha: "0".repeat(40) }),
        )
      ).status,
    ).toBe(404);
  });

  it("renders labels and comments with links in the caller's spelling of the repository", async () => {
    const { number } = w.hub.control.openIssue({ ...repo, title: "Spelling" });
    const spelled = { owner: "ACME", repo: "Api" };
    const labels = await w.octokit.rest.issues.addLabels({ ...spelled, issue_number: number, labels: ["docs"] });
    expect(labels.data).toEqual([
      {
        name: "docs",
        url: `${w.hub.url}/repos/ACME/Api/labels/docs`,
        color: "ededed",
        default: false,
        description: null,
      },
    ]);
    const comment = await w.octokit.rest.issues.createComment({ ...spelled, issue_number: number, body: "Noted" });
    expect(comment.status).toBe(201);
    expect(comment.data).toMatchObject({
      node_id: `IC_${comment.data.id}`,
      url: `${w.hub.url}/repos/ACME/Api/issues/comments/${comment.data.id}`,
      issue_url: `${w.hub.url}/repos/ACME/Api/issues/${number}`,
      body: "Noted",
      user: { login: "steward-sandbox[bot]", type: "Bot" },
      author_association: "NONE",
    });
    const listed = (await w.octokit.rest.issues.listComments({ ...repo, issue_number: number })).data;
    expect(listed.map((c) => [c.id, c.url])).toEqual([
      [comment.data.id, `${w.hub.url}/repos/acme/api/issues/comments/${comment.data.id}`],
    ]);
    const issue = (await w.octokit.rest.issues.get({ ...repo, issue_number: number })).data;
    expect([issue.comments, issue.labels.map((l) => (typeof l === "string" ? l : l.name))]).toEqual([1, ["docs"]]);
  });

  it("re-requests a check suite of the app (check_suite.rerequested) but not another app's suite", async () => {
    const run = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "suite-again",
      head_sha: sha,
      conclusion: "failure",
    });
    const suiteId = run.data.check_suite!.id;
    const again = await w.octokit.request("POST /repos/{owner}/{repo}/check-suites/{check_suite_id}/rerequest", {
      ...repo,
      check_suite_id: suiteId,
    });
    expect(again.status).toBe(201);
    await w.settle();
    expect(w.deliveries("check_suite", "rerequested").some((d) => d.payload.check_suite.id === suiteId)).toBe(true);

    const wf = w.hub.domains.actions.startRun({ ...repo, workflow: "CI", sha, jobs: [{ name: "unit" }] });
    const job = await w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...repo,
      check_run_id: w.hub.domains.actions.jobsOf(wf)[0]!.id,
    });
    const theirs = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/check-suites/{check_suite_id}/rerequest", {
        ...repo,
        check_suite_id: job.data.check_suite!.id,
      }),
    );
    expect([theirs.status, theirs.message]).toEqual([
      403,
      "This check suite can only be re-requested by the app that created it",
    ]);
    const theirRun = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/check-runs/{check_run_id}/rerequest", {
        ...repo,
        check_run_id: job.data.id,
      }),
    );
    expect([theirRun.status, theirRun.message]).toEqual([
      403,
      "This check run can only be re-requested by the app that created it",
    ]);
  });
});
