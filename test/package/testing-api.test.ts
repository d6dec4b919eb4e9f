// `steward/testing`'s startSandboxStack as an app's own package uses it: it runs exactly the
// handlers or apps given (the built-in handlers only when asked) and installs the app in the hub
// with the grant of the app's own app.yml (Steward's only when the app has none).
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defineHandler } from "../../src/index.js";
import { outcomeOf, startSandboxStack, type SandboxStack } from "../../src/testing.js";
import { STEWARD_APP } from "../../src/sandbox/hub.js";

let dir: string | undefined;
let stack: SandboxStack | undefined;
afterEach(async () => {
  await stack?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = stack = undefined;
});

const ISSUES_YML = ["default_events:", "  - issues", "default_permissions:", "  issues: write", ""].join("\n");

/** A Probot app in a package of its own, app.yml at the package root. */
async function probotApp(): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), "steward-testing-api-"));
  await mkdir(join(dir, "greeter", "lib"), { recursive: true });
  await writeFile(join(dir, "greeter", "package.json"), JSON.stringify({ name: "greeter", main: "lib/index.js" }));
  await writeFile(join(dir, "greeter", "app.yml"), ISSUES_YML);
  const entry = join(dir, "greeter", "lib", "greeter.cjs");
  await writeFile(
    entry,
    [
      "module.exports = (app) => {",
      '  app.on("issues.opened", async (context) => {',
      '    await context.octokit.issues.createComment(context.issue({ body: "Thanks!" }));',
      "  });",
      "};",
    ].join("\n"),
  );
  return entry;
}

async function inDirectory<T>(cwd: string, run: () => Promise<T>): Promise<T> {
  const was = process.cwd();
  process.chdir(cwd);
  try {
    return await run();
  } finally {
    process.chdir(was);
  }
}

const thanks = defineHandler({
  name: "thanks",
  events: ["issues.opened"],
  async handle(ctx) {
    const { repository, issue } = ctx.payload;
    await ctx.octokit.rest.issues.createComment({
      owner: repository.owner.login,
      repo: repository.name,
      issue_number: issue.number,
      body: "Thanks!",
    });
    return { status: "done" };
  },
});

/** Opens an issue; the handlers that have an outcome on its delivery, and whether it got a comment. */
async function openIssue(s: SandboxStack, waitFor: string) {
  const issue = s.hub.control.openIssue({ owner: "acme", repo: "web", title: "Crash" });
  await s.hub.control.settled();
  const delivery = s.hub.control.deliveries().find((d) => d.event === "issues")!;
  expect((await outcomeOf(s, delivery.guid, waitFor)).status).toBe("done");
  const stored = await s.steward.store.deliveries.getDelivery(delivery.guid);
  return {
    handlers: stored!.outcomes.map((o) => o.handler).sort(),
    commented: s.hub.control.effects.some((e) => e.kind === "issues.commented" && e.detail.number === issue.number),
  };
}

describe("steward/testing startSandboxStack", () => {
  it("apps: runs the Probot app alone, installed with its own app.yml", async () => {
    const entry = await probotApp();
    stack = await startSandboxStack({ apps: [entry] });
    const grant = stack.hub.control.installation("acme")!;
    expect(grant.events).toEqual(["issues"]);
    expect(grant.permissions).toMatchObject({ issues: "write" });
    expect(await openIssue(stack, "greeter")).toEqual({ handlers: ["greeter"], commented: true });
  });

  it("handlers: runs exactly the handler given, with the grant of the app.yml named by `manifest`", async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-testing-api-"));
    await writeFile(join(dir, "app.yml"), ISSUES_YML);
    stack = await startSandboxStack({ handlers: [thanks], manifest: join(dir, "app.yml") });
    expect(stack.hub.control.installation("acme")!.events).toEqual(["issues"]);
    expect(await openIssue(stack, "thanks")).toEqual({ handlers: ["thanks"], commented: true });
  });

  it("handlers: the working directory's app.yml (the package root's, where tests run) by default", async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-testing-api-"));
    await writeFile(join(dir, "app.yml"), ISSUES_YML);
    stack = await inDirectory(dir, () => startSandboxStack({ handlers: [thanks] }));
    expect(stack.hub.control.installation("acme")!.events).toEqual(["issues"]);
  });

  it("builtins: the built-in handlers run beside the given ones only when asked", async () => {
    const entry = await probotApp();
    stack = await startSandboxStack({ apps: [entry], builtins: ["rerun"] });
    expect(stack.hub.control.installation("acme")!.events).toEqual(
      expect.arrayContaining([...STEWARD_APP.events, "issues"]),
    );
    expect(stack.steward.handlers.map((h) => h.name).sort()).toEqual(["greeter", "rerun"]);
  });

  it("an app without an app.yml is installed with Steward's", async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-testing-api-"));
    stack = await inDirectory(dir, () => startSandboxStack({ handlers: [thanks] }));
    expect(stack.hub.control.installation("acme")!.events.sort()).toEqual([...STEWARD_APP.events].sort());
    expect(stack.steward.handlers.map((h) => h.name)).toEqual(["thanks"]);
  });

  it("refuses handlers and apps together, naming both options", async () => {
    await expect(startSandboxStack({ handlers: [thanks], apps: ["./x.js"] })).rejects.toThrow(
      "give either `handlers` (modules) or `apps` (paths), not both",
    );
  });
});
