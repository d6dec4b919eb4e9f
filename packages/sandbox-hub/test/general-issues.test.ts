// Issues, their comments and labels, and reactions through Octokit against the running hub;
// users' actions simulated from the control API send `issues` and `issue_comment` deliveries.
import { describe, expect, it } from "vitest";
import { createWithNothing, outcome, worldPerTest } from "./domain-helpers.js";

const world = worldPerTest();

const repo = { owner: "acme", repo: "web" };

describe("issues", () => {
  it("creates, gets, lists (pull requests included), edits and closes an issue, sharing numbers with pull requests", async () => {
    const pr = world().hub.control.openPullRequest({
      ...repo,
      head: "topic",
      title: "A change",
      files: { "c.txt": "c\n" },
    });
    const { data: issue, status } = await world().octokit.rest.issues.create({
      ...repo,
      title: "Broken link",
      body: "on the home page",
    });
    expect(status).toBe(201);
    expect(issue).toMatchObject({
      number: pr.number + 1,
      state: "open",
      title: "Broken link",
      user: { login: "steward-sandbox[bot]" },
    });
    expect((await world().octokit.rest.issues.get({ ...repo, issue_number: issue.number })).data.body).toBe(
      "on the home page",
    );
    const asIssue = (await world().octokit.rest.issues.get({ ...repo, issue_number: pr.number })).data;
    expect(asIssue.pull_request).toBeTruthy();

    await world().octokit.rest.issues.addLabels({ ...repo, issue_number: issue.number, labels: ["bug"] });
    await world().octokit.rest.issues.createComment({ ...repo, issue_number: issue.number, body: "Looking" });
    const listed = (await world().octokit.rest.issues.listForRepo(repo)).data;
    expect(
      listed.map((i) => [i.number, i.labels.map((l) => (typeof l === "string" ? l : l.name)), i.comments]),
    ).toEqual([
      [issue.number, ["bug"], 1],
      [pr.number, [], 0],
    ]);

    const closed = (
      await world().octokit.rest.issues.update({
        ...repo,
        issue_number: issue.number,
        title: "Broken link on home",
        state: "closed",
        state_reason: "completed",
      })
    ).data;
    expect(closed).toMatchObject({ state: "closed", state_reason: "completed", title: "Broken link on home" });
    expect((await world().octokit.rest.issues.listForRepo(repo)).data.map((i) => i.number)).toEqual([pr.number]);
    expect(
      (await world().octokit.rest.issues.listForRepo({ ...repo, state: "closed" })).data.map((i) => i.number),
    ).toEqual([issue.number]);

    await world().settle();
    expect(
      world()
        .deliveries("issues")
        .map((d) => d.action),
    ).toEqual(["opened", "edited", "closed"]);
    expect(world().deliveries("issues", "edited")[0]!.payload.changes).toEqual({ title: { from: "Broken link" } });
  });

  it("answers 422 without a title, 404 for an unknown number", async () => {
    expect(await createWithNothing(world(), "POST /repos/{owner}/{repo}/issues")).toEqual({
      status: 422,
      errors: [{ resource: "Issue", field: "title", code: "missing_field" }],
    });
    expect((await outcome(world().octokit.rest.issues.get({ ...repo, issue_number: 4242 }))).status).toBe(404);
    expect(
      (await outcome(world().octokit.rest.issues.createComment({ ...repo, issue_number: 4242, body: "x" }))).status,
    ).toBe(404);
  });

  it("simulates a user opening an issue and commenting on it (issues.opened, issue_comment.created)", async () => {
    const { number } = world().hub.control.openIssue({ ...repo, title: "Please add dark mode", body: "thanks" });
    const { id } = world().hub.control.commentOnIssue({ ...repo, number, body: "+1 from me", author: "dev-dana" });
    await world().settle();
    const opened = world().deliveries("issues", "opened")[0]!;
    expect(opened.signatureValid).toBe(true);
    expect(opened.payload).toMatchObject({
      issue: { number, title: "Please add dark mode", user: { login: "contributor" } },
      sender: { login: "contributor" },
      repository: { full_name: "acme/web" },
    });
    const commented = world().deliveries("issue_comment", "created")[0]!;
    expect(commented.payload).toMatchObject({
      issue: { number, comments: 1 },
      comment: { id, body: "+1 from me", user: { login: "dev-dana" }, author_association: "MEMBER" },
    });
    const comments = (await world().octokit.rest.issues.listComments({ ...repo, issue_number: number })).data;
    expect(comments.map((c) => [c.id, c.body])).toEqual([[id, "+1 from me"]]);
  });
});

describe("reactions", () => {
  it("reacts to an issue and a comment once per user and content, lists and deletes", async () => {
    const { number } = world().hub.control.openIssue({ ...repo, title: "Idea" });
    const { id: commentId } = world().hub.control.commentOnIssue({ ...repo, number, body: "Nice" });
    const first = await world().octokit.rest.reactions.createForIssue({
      ...repo,
      issue_number: number,
      content: "heart",
    });
    expect(first.status).toBe(201);
    expect(first.data).toMatchObject({ content: "heart", user: { login: "steward-sandbox[bot]" } });
    const again = await world().octokit.rest.reactions.createForIssue({
      ...repo,
      issue_number: number,
      content: "heart",
    });
    expect([again.status, again.data.id]).toEqual([200, first.data.id]);
    await world().octokit.rest.reactions.createForIssueComment({ ...repo, comment_id: commentId, content: "+1" });
    expect(
      (await world().octokit.rest.reactions.listForIssue({ ...repo, issue_number: number })).data.map((r) => r.content),
    ).toEqual(["heart"]);
    expect(
      (await world().octokit.rest.reactions.listForIssueComment({ ...repo, comment_id: commentId })).data.map(
        (r) => r.content,
      ),
    ).toEqual(["+1"]);
    const bad = await outcome(
      world().octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/reactions", {
        ...repo,
        issue_number: number,
        content: "clap",
      } as never),
    );
    expect(bad.status).toBe(422);
    expect(
      (
        await outcome(
          world().octokit.rest.reactions.createForIssueComment({ ...repo, comment_id: 987654, content: "+1" }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await world().octokit.rest.reactions.deleteForIssue({
          ...repo,
          issue_number: number,
          reaction_id: first.data.id,
        })
      ).status,
    ).toBe(204);
    expect((await world().octokit.rest.reactions.listForIssue({ ...repo, issue_number: number })).data).toEqual([]);
  });
});
