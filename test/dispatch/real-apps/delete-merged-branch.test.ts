// A real, published Probot app written for Probot 9 (`delete-merged-branch` from npm: it calls
// `app.log(...)` as a function, reads `context.config(...)` and deletes through `context.github`)
// loaded the way a user loads one, by STEWARD_HANDLERS, and driven by the sandbox hub's own
// `pull_request` deliveries to its visible effect: the merged branch is gone from the hub.
import { afterEach, describe, expect, it } from "vitest";
import { STEWARD_APP } from "../../../src/sandbox/hub.js";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { outcomeOf } from "../../../src/testing.js";

const APP = "node_modules/delete-merged-branch/index.js";
const NAME = "delete-merged-branch";
/** Steward's manifest grants `contents: read`; deleting a branch needs write, as the app's own manifest asks. */
const GRANT = { permissions: { ...STEWARD_APP.permissions, contents: "write" as const }, events: STEWARD_APP.events };
const start = () => startSandboxStack({ env: { STEWARD_HANDLERS: APP }, hub: { app: GRANT } });

let stack: SandboxStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

describe("delete-merged-branch (Probot 9) behind Steward", () => {
  it("deletes the head branch of a merged pull request and is skipped for events it does not listen to", async () => {
    stack = await start();
    const { control } = stack.hub;
    const pr = control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "feature/tidy",
      title: "Tidy",
      files: { "tidy.txt": "x\n" },
    });
    await control.settled();
    const branch = stack.hub.state.git(control.repo("acme", "web")!).branches;
    expect(branch.has("feature/tidy")).toBe(true);

    control.closePullRequest({ owner: "acme", repo: "web", number: pr.number, merge: true });
    await control.settled();
    const deliveries = control.deliveries();
    const closed = deliveries.find((d) => d.event === "pull_request" && d.action === "closed")!;
    const opened = deliveries.find((d) => d.event === "pull_request" && d.action === "opened")!;

    expect(await outcomeOf(stack, closed.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({ status: "done" });
    expect(branch.has("feature/tidy")).toBe(false);
    const deletes = control
      .requests()
      .filter((r) => r.method === "DELETE" && r.route === "/repos/{owner}/{repo}/git/refs/{ref+}");
    expect(deletes.map((r) => [r.path, r.status])).toEqual([["/repos/acme/web/git/refs/heads%2Ffeature%2Ftidy", 204]]);
    expect(control.effects.filter((e) => e.kind === "git.ref_deleted").map((e) => e.detail.ref)).toEqual([
      "refs/heads/feature/tidy",
    ]);
    // It read its configuration file (absent: the app's defaults) through the contents API.
    expect(
      control
        .requests()
        .some(
          (r) => r.method === "GET" && /\/contents\/\.github(\/|%2F)delete-merged-branch-config\.yml$/.test(r.path),
        ),
    ).toBe(true);

    // `pull_request.opened` is not one of its events.
    expect(await outcomeOf(stack, opened.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({
      status: "skipped",
      detail: "the app does not listen to pull_request.opened",
    });
  });

  it("with Steward's own grant (contents: read) the delete is refused and the branch stays", async () => {
    stack = await startSandboxStack({ env: { STEWARD_HANDLERS: APP } });
    const { control } = stack.hub;
    const pr = control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "feature/ro",
      title: "Read-only",
      files: { "ro.txt": "x\n" },
    });
    await control.settled();
    control.closePullRequest({ owner: "acme", repo: "web", number: pr.number, merge: true });
    await control.settled();
    const closed = control.deliveries().find((d) => d.event === "pull_request" && d.action === "closed")!;
    // The app catches the failed delete and only logs it: its outcome is `done` all the same.
    expect(await outcomeOf(stack, closed.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({ status: "done" });
    expect(
      control
        .requests()
        .filter((r) => r.method === "DELETE")
        .map((r) => r.status),
    ).toEqual([403]);
    expect(stack.hub.state.git(control.repo("acme", "web")!).branches.has("feature/ro")).toBe(true);
  });

  it("keeps the branch of a pull request closed without merging (its default)", async () => {
    stack = await start();
    const { control } = stack.hub;
    const pr = control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "feature/keep",
      title: "Keep",
      files: { "keep.txt": "x\n" },
    });
    await control.settled();
    control.closePullRequest({ owner: "acme", repo: "web", number: pr.number });
    await control.settled();
    const closed = control.deliveries().find((d) => d.event === "pull_request" && d.action === "closed")!;
    expect(await outcomeOf(stack, closed.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({ status: "done" });
    expect(stack.hub.state.git(control.repo("acme", "web")!).branches.has("feature/keep")).toBe(true);
    expect(control.requests().some((r) => r.method === "DELETE")).toBe(false);
  });
});
