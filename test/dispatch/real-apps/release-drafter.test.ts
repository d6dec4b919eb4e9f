// A real, published Probot app written for Probot 12 (`release-drafter-github-app` from npm)
// loaded by STEWARD_HANDLERS and driven by the sandbox hub's own deliveries: on
// `pull_request.opened` its autolabeler labels the pull request (legacy `pulls.listFiles.endpoint`
// and `issues.addLabels`), and on each `push` to the default branch it drafts (then updates) a release: configuration
// through `context.config`, releases through the REST API, the merged pull requests through
// GraphQL (`Commit.history` / `associatedPullRequests`).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { STEWARD_APP } from "../../../src/sandbox/hub.js";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { releasesOf } from "../../../packages/sandbox-hub/src/releases/routes.js";
import { labelsOf } from "../../../packages/sandbox-hub/src/issues/labels.js";
import { outcomeOf } from "../../../src/testing.js";

const APP = "node_modules/release-drafter-github-app/index.js";
const NAME = "release-drafter-github-app";
/** Drafting releases needs `contents: write` (release-drafter's own manifest asks for it); Steward's grants read. */
const GRANT = { permissions: { ...STEWARD_APP.permissions, contents: "write" as const }, events: STEWARD_APP.events };
const CONFIG = [
  "name-template: 'v$RESOLVED_VERSION'",
  "tag-template: 'v$RESOLVED_VERSION'",
  "categories:",
  "  - title: Features",
  "    labels: [feature]",
  "autolabeler:",
  "  - label: feature",
  "    branch: ['/^feature\\/.+/']",
  "template: |",
  "  ## Changes",
  "  $CHANGES",
  "",
].join("\n");

let stack: SandboxStack | undefined;
// On GitHub Actions the app switches to its Action mode (inputs from the environment): run it as an app.
beforeEach(() => vi.stubEnv("GITHUB_ACTIONS", undefined));
afterEach(async () => {
  vi.unstubAllEnvs();
  await stack?.close();
  stack = undefined;
});

describe("release-drafter (Probot 12) behind Steward", () => {
  it("labels the pull request, then drafts a release listing it once it is merged", async () => {
    stack = await startSandboxStack({ env: { STEWARD_HANDLERS: APP }, hub: { app: GRANT } });
    const { control } = stack.hub;
    const web = control.repo("acme", "web")!;
    control.pushFiles({
      owner: "acme",
      repo: "web",
      files: { ".github/release-drafter.yml": CONFIG },
      message: "Configure release-drafter",
    });
    await control.settled();
    // The hub's settled() means Steward answered; the app's work on the push is done once its outcome is.
    const configured = control.deliveries().find((d) => d.event === "push")!;
    expect(await outcomeOf(stack, configured.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({ status: "done" });

    const pr = control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "feature/login",
      title: "Sign in with a passkey",
      files: { "src/login.js": "export {};\n" },
    });
    await control.settled();
    const opened = control.deliveries().find((d) => d.event === "pull_request" && d.action === "opened")!;
    expect(await outcomeOf(stack, opened.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({ status: "done" });
    expect(labelsOf(stack.hub.state, web.id, pr.number)).toEqual(["feature"]);
    // Pushing the configuration to the default branch already drafted a release with no changes.
    expect(releasesOf(stack.hub.state, web.id).map((r) => [r.draft, r.body])).toEqual([
      [true, "## Changes\n* No changes\n"],
    ]);

    control.mergePullRequest({ owner: "acme", repo: "web", number: pr.number });
    await control.settled();
    const deliveries = control.deliveries();
    const push = deliveries.filter((d) => d.event === "push").at(-1)!;
    const closed = deliveries.find((d) => d.event === "pull_request" && d.action === "closed")!;
    expect(await outcomeOf(stack, push.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({ status: "done" });

    const [draft, ...others] = releasesOf(stack.hub.state, web.id);
    expect(others).toEqual([]);
    expect(draft).toMatchObject({ draft: true, tag_name: "v0.1.0", name: "v0.1.0" });
    expect(draft!.body).toContain("## Features");
    expect(draft!.body).toContain(`Sign in with a passkey (#${pr.number})`);
    expect(control.requests().some((r) => r.method === "POST" && r.path === "/graphql" && r.status === 200)).toBe(true);
    // The draft from the first push was updated in place, not duplicated.
    expect(
      control
        .requests()
        .filter((r) => r.path.startsWith("/repos/acme/web/releases") && r.method !== "GET")
        .map((r) => [r.method, r.status]),
    ).toEqual([
      ["POST", 201],
      ["PATCH", 200],
    ]);

    // `pull_request.closed` is not among its events.
    expect(await outcomeOf(stack, closed.guid, NAME, { timeoutMs: 60_000 })).toMatchObject({
      status: "skipped",
      detail: "the app does not listen to pull_request.closed",
    });
  });
});
