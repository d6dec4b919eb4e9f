// Probot compatibility through the sandbox: a Probot 12-style app (legacy REST namespaces,
// context.config, context.issue/repo, app.on([...]), app.onError), one in Probot 13/14's
// shape (ESM, `.rest`, `paginate`, `context.log`, `app.auth()`), one of Probot 10 (`context.octokit`,
// `context.config` merging defaults, `app.route()`) and one of Probot 11 (`(app, { getRouter })`,
// `app.onAny`, `context.log`, `context.isBot`) run to their visible effects, and are `skipped` for
// events they did not subscribe to. Apps' HTTP routes in depth: probot-routes.test.ts.
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import pino from "pino";
import type { HandlerModule } from "../../src/handler.js";
import { loadHandlerModules } from "../../src/modules/load.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { STEWARD_APP } from "../../src/sandbox/hub.js";
import { outcomeOf } from "../../src/testing.js";
import { commentsOf } from "../../packages/sandbox-hub/src/issues/comments.js";

const fixture = (name: string) => relative(process.cwd(), join(import.meta.dirname, "fixtures", name));
const silent = pino({ level: "silent" });

let stack: SandboxStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

/**
 * The app needs the hub's credentials, which exist only once the stack runs: the stack starts
 * with a stand-in that hands each delivery to the app loaded right after.
 */
async function stackWithApp(file: string, events: string[] = []): Promise<{ s: SandboxStack; name: string }> {
  let loaded: HandlerModule<any> | undefined;
  const name = file.replace(/\.[cm]js$/, "");
  const standIn: HandlerModule<any> = { name, events: ["*"], handle: (ctx) => loaded!.handle(ctx) };
  const app = { permissions: STEWARD_APP.permissions, events: [...STEWARD_APP.events, ...events] };
  const s = await startSandboxStack({ handlers: [standIn], hub: { app } });
  [loaded] = await loadHandlerModules([fixture(file)], { config: s.config, logger: silent });
  expect(loaded!.name).toBe(name);
  return { s, name };
}

describe("a Probot 12-style app behind Steward", () => {
  it("comments and labels through the legacy namespaces, reading its config from the repository", async () => {
    const { s, name } = await stackWithApp("legacy-probot-app.cjs");
    stack = s;
    s.hub.control.pushFiles({
      owner: "acme",
      repo: "web",
      files: { ".github/legacy-bot.yml": "greeting: Welcome aboard\nlabel: needs-review\n" },
    });
    await s.hub.control.settled();
    const pr = s.hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "legacy",
      title: "legacy",
      files: { "legacy.txt": "x\n" },
    });
    await s.hub.control.settled();
    const deliveries = s.hub.control.deliveries();
    const opened = deliveries.find(
      (d) =>
        d.event === "pull_request" && d.action === "opened" && (d.payload as { number?: number }).number === pr.number,
    )!;
    const push = deliveries.find((d) => d.event === "push")!;

    expect(await outcomeOf(s, opened.guid, name)).toMatchObject({ status: "done" });
    const comments = s.hub.control.effects.filter(
      (e) => e.kind === "issues.commented" && e.detail.number === pr.number,
    );
    expect(comments).toHaveLength(1);
    expect(
      s.hub.control.requests().some((r) => r.method === "GET" && r.path === `/repos/acme/web/pulls/${pr.number}`),
    ).toBe(true);
    const labels = s.hub.control.effects.filter((e) => e.kind === "issues.labeled" && e.detail.number === pr.number);
    expect(labels.map((e) => e.detail.label)).toEqual(["needs-review"]);
    // context.config read the file through the contents API (the label above came from it).
    expect(
      s.hub.control
        .requests()
        .some(
          (r) => r.method === "GET" && /^\/repos\/acme\/web\/contents\/\.github(\/|%2F)legacy-bot\.yml$/.test(r.path),
        ),
    ).toBe(true);

    // Not subscribed: the push is the app's `skipped`, with the reason naming the event.
    expect(await outcomeOf(s, push.guid, name)).toMatchObject({
      status: "skipped",
      detail: "the app does not listen to push",
    });
  });

  it("an app listening through app.onAny is done for every event", async () => {
    const { s, name } = await stackWithApp("any-probot-app.cjs");
    stack = s;
    s.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "any.txt": "x\n" } });
    await s.hub.control.settled();
    const push = s.hub.control.deliveries().find((d) => d.event === "push")!;
    expect(await outcomeOf(s, push.guid, name)).toMatchObject({ status: "done" });
    expect(s.hub.control.requests().some((r) => r.method === "GET" && r.path === "/repos/acme/web")).toBe(true);
  });
});

describe("a Probot 13/14-style app behind Steward", () => {
  it("counts every page of comments with its app identity, creates a check run, and is skipped for the rest", async () => {
    const { s, name } = await stackWithApp("modern-probot-app.mjs", ["issues", "issue_comment"]);
    stack = s;
    const { control } = s.hub;
    const issue = control.openIssue({ owner: "acme", repo: "web", title: "Count us" });
    for (const body of ["first", "second", "/count"])
      control.commentOnIssue({ owner: "acme", repo: "web", number: issue.number, body });
    await control.settled();
    const asked = control
      .deliveries()
      .find(
        (d) =>
          d.event === "issue_comment" && (d.request.payload as { comment: { body: string } }).comment.body === "/count",
      )!;
    expect(await outcomeOf(s, asked.guid, name)).toMatchObject({ status: "done" });

    const web = control.repo("acme", "web")!;
    const bodies = commentsOf(s.hub.state, web.id, issue.number).map((c) => [c.user, c.body]);
    expect(bodies.at(-1)).toEqual([`${s.hub.state.appSlug}[bot]`, `${s.hub.state.appSlug} counted 3 comments`]);
    // `paginate` followed the Link header one comment a page; `app.auth()` asked as the app itself.
    const pages = control
      .requests()
      .filter((r) => r.method === "GET" && r.path.startsWith(`/repos/acme/web/issues/${issue.number}/comments`));
    expect(pages).toHaveLength(3);
    expect(control.requests().some((r) => r.method === "GET" && r.path === "/app" && r.status === 200)).toBe(true);

    const pr = control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "modern",
      title: "Modern",
      files: { "m.txt": "x\n" },
    });
    await control.settled();
    const deliveries = control.deliveries();
    const opened = deliveries.find((d) => d.event === "pull_request" && d.action === "opened")!;
    expect(await outcomeOf(s, opened.guid, name)).toMatchObject({ status: "done" });
    const runs = (
      s.hub.domains.checks.checkRuns({ owner: "acme", repo: "web" }) as {
        name: string;
        head_sha: string;
        conclusion: string | null;
      }[]
    ).filter((r) => r.name === "modern-app");
    expect(runs.map((r) => [r.head_sha, r.conclusion])).toEqual([[pr.head_sha, "success"]]);

    const openedIssue = deliveries.find((d) => d.event === "issues" && d.action === "opened")!;
    expect(await outcomeOf(s, openedIssue.guid, name)).toMatchObject({
      status: "skipped",
      detail: "the app does not listen to issues.opened",
    });
  });
});

/** The apps at `files`, loaded as STEWARD_HANDLERS loads them (their routes on Steward's server), alone. */
async function stackHosting(files: string[]): Promise<SandboxStack> {
  const app = {
    permissions: { ...STEWARD_APP.permissions, issues: "write" as const },
    events: [...STEWARD_APP.events, "issues", "issue_comment"],
  };
  return startSandboxStack({
    hub: { app },
    env: { STEWARD_HANDLERS: files.map(fixture).join(","), STEWARD_BUILTIN_HANDLERS: "none" },
  });
}

const delivered = (s: SandboxStack, event: string, action: string, number: number) =>
  s.hub.control
    .deliveries()
    .find(
      (d) =>
        d.event === event &&
        d.action === action &&
        (d.payload as { issue?: { number?: number } }).issue?.number === number,
    )!;

describe("a Probot 10-style app behind Steward", () => {
  it("labels and greets an opened issue from its repository config, and serves its app.route()", async () => {
    const s = (stack = await stackHosting(["probot10-app.cjs"]));
    const { control } = s.hub;
    control.pushFiles({
      owner: "acme",
      repo: "web",
      files: { ".github/probot10.yml": "greeting: Welcome\nlabels: [needs-triage, new]\n" },
    });
    const issue = control.openIssue({ owner: "acme", repo: "web", title: "Ten", author: "dev-dana" });
    await control.settled();
    expect(await outcomeOf(s, delivered(s, "issues", "opened", issue.number).guid, "probot10-app")).toMatchObject({
      status: "done",
    });

    const web = control.repo("acme", "web")!;
    expect(commentsOf(s.hub.state, web.id, issue.number).map((c) => [c.user, c.body])).toEqual([
      [`${s.hub.state.appSlug}[bot]`, "Welcome, @dev-dana"],
    ]);
    const labels = control.effects.filter((e) => e.kind === "issues.labeled" && e.detail.number === issue.number);
    // Probot's config merges the file over the defaults, arrays concatenated.
    expect(labels.map((e) => e.detail.label)).toEqual(["triage", "needs-triage", "new"]);
    const greeted = await fetch(`${s.steward.url}/probot10/greeted`);
    expect(await greeted.json()).toEqual([issue.number]);
  });
});

describe("a Probot 11-style app behind Steward", () => {
  it("reacts to a comment and closes the issue on /close, sees every event through onAny, and serves getRouter()", async () => {
    const s = (stack = await stackHosting(["probot11-app.cjs"]));
    const { control } = s.hub;
    const issue = control.openIssue({ owner: "acme", repo: "web", title: "Eleven" });
    const comment = control.commentOnIssue({
      owner: "acme",
      repo: "web",
      number: issue.number,
      body: "/close please",
      author: "dev-dana",
    });
    await control.settled();
    for (const [event, action] of [
      ["issues", "opened"],
      ["issue_comment", "created"],
    ] as const)
      expect(await outcomeOf(s, delivered(s, event, action, issue.number).guid, "probot11-app")).toMatchObject({
        status: "done",
      });
    // The app's close (made while it handled the comment) comes back as a delivery of its own.
    const [closed] = await control.waitForDeliveries((d) => d.event === "issues" && d.action === "closed", {
      timeoutMs: 60_000,
    });
    expect(await outcomeOf(s, closed!.guid, "probot11-app")).toMatchObject({ status: "done" });

    const token = control.userToken("dev-dana");
    const get = async (path: string) =>
      (await fetch(`${s.hub.url}/repos/acme/web${path}`, { headers: { Authorization: `token ${token}` } })).json();
    const reactions = (await get(`/issues/comments/${comment.id}/reactions`)) as {
      content: string;
      user: { login: string } | null;
    }[];
    expect(reactions.map((r) => [r.content, r.user?.login])).toEqual([["+1", `${s.hub.state.appSlug}[bot]`]]);
    expect(((await get(`/issues/${issue.number}`)) as { state: string }).state).toBe("closed");

    // onAny saw the issue, the comment and its own close (context.isBot kept it from acting on that).
    const seen = (await (await fetch(`${s.steward.url}/probot11/seen`)).json()) as string[];
    expect(seen).toEqual(expect.arrayContaining(["issues.opened", "issue_comment.created", "issues.closed"]));
  });
});
