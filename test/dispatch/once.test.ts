// ctx.once end to end: a handler comments on a new pull request through the sandbox hub, the
// hub runs the comment route and then loses its answer; the retry must find the comment that
// landed (via `check`) instead of posting a second one, and the delivery ends `done`.
import { afterEach, describe, expect, it } from "vitest";
import { defineHandler } from "../../src/index.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { outcomeOf } from "../../src/testing.js";

const MARKER = "<!-- steward:welcome -->";
const COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";

/** The README's example handler. */
const welcome = defineHandler({
  name: "welcome",
  events: ["pull_request.opened"],
  async handle(ctx) {
    const { repository, pull_request: pr } = ctx.payload;
    const where = { owner: repository.owner.login, repo: repository.name, issue_number: pr.number };
    const posted = await ctx.once(`comment:${repository.id}:${pr.number}`, {
      run: async () =>
        (await ctx.octokit.rest.issues.createComment({ ...where, body: `Thanks for the pull request!\n${MARKER}` }))
          .data.id,
      check: async () =>
        (await ctx.octokit.rest.issues.listComments({ ...where, per_page: 100 })).data.find((c) =>
          c.body?.includes(MARKER),
        )?.id,
    });
    return { status: "done", summary: `comment ${posted.value} (${posted.state})` };
  },
});

let stack: SandboxStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function openAndSettle(s: SandboxStack, head: string) {
  const pr = s.hub.control.openPullRequest({
    owner: "acme",
    repo: "web",
    head,
    title: head,
    files: { [`${head}.txt`]: "x\n" },
  });
  await s.hub.control.settled();
  const delivery = s.hub.control
    .deliveries()
    .find(
      (d) =>
        d.event === "pull_request" && d.action === "opened" && (d.payload as { number?: number }).number === pr.number,
    )!;
  // A failed attempt is retried after a backoff: wait until the handler's outcome is final.
  const outcome = await outcomeOf(s, delivery.guid, "welcome");
  const comments = s.hub.control.effects.filter((e) => e.kind === "issues.commented" && e.detail.number === pr.number);
  return { outcome, comments };
}

// Room above the 60 s wait in openAndSettle (a retried delivery) for a loaded machine.
describe("ctx.once through the sandbox hub", { timeout: 120_000 }, () => {
  it("posts exactly one comment when the comment's answer is lost, and ends done", async () => {
    stack = await startSandboxStack({ handlers: [welcome] });
    stack.hub.control.setFault(COMMENTS, { after: true, times: 1 });
    const { outcome, comments } = await openAndSettle(stack, "lost-answer");
    expect(comments).toHaveLength(1);
    expect(outcome.attempts).toBeGreaterThan(1);
    expect(outcome.status).toBe("done");
    expect(outcome.detail).toMatch(/\(found\)$/);
  });

  it("without a fault the comment is posted once and recorded as ran", async () => {
    stack = await startSandboxStack({ handlers: [welcome] });
    const first = await openAndSettle(stack, "no-fault");
    expect(first.outcome).toMatchObject({ status: "done", attempts: 1 });
    expect(first.outcome.detail).toMatch(/\(ran\)$/);
    expect(first.comments).toHaveLength(1);
  });
});
