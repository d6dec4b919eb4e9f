// `steward run ./index.js` (Probot's `probot run` habit) with no APP_ID: a Probot app in a package
// of its own, with its own app.yml asking for `issues` and `issue_comment`, runs in the sandbox
// installed with that grant; an issue opened through the hub's control surface gets the app's
// comment, and the banner says what is hosted, where the data is and how to register the app.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startChild } from "../service/child.js";
import { control as post, pollUntil, readAs, sandboxChildren } from "./sandbox-child.js";

const children = sandboxChildren();

/** A Probot app as `create-probot-app` lays it out: package.json, app.yml at the root, the entry in lib/. */
async function probotPackage(root: string): Promise<string> {
  await mkdir(join(root, "lib"), { recursive: true });
  await writeFile(
    join(root, "package.json"),
    JSON.stringify({ name: "greeter", version: "1.0.0", main: "lib/index.js" }),
  );
  await writeFile(
    join(root, "app.yml"),
    ["default_events:", "  - issues", "  - issue_comment", "default_permissions:", "  issues: write", ""].join("\n"),
  );
  const entry = join(root, "lib", "index.js");
  await writeFile(
    entry,
    [
      "module.exports = (app) => {",
      '  app.on("issues.opened", async (context) => {',
      '    await context.octokit.issues.createComment(context.issue({ body: "Thanks for opening this issue!" }));',
      "  });",
      "};",
      "",
    ].join("\n"),
  );
  return entry;
}

describe("steward run APP (no APP_ID)", () => {
  it("hosts a Probot app with its own app.yml's grant: it comments on an issue opened in the sandbox", async () => {
    const dir = await children.tempDir("steward-run-");
    const entry = await probotPackage(join(dir, "greeter"));
    const run = await children.start(["run", entry], dir);
    const out = run.out();
    expect(out).toContain("running against the SANDBOX hub");
    expect(out).toMatch(/hosting:\s+\S+index\.js \(its \S*app\.yml: events issues, issue_comment\)/);
    expect(out).toContain("none (STEWARD_BUILTIN_HANDLERS=none)");
    expect(out).toContain(`data directory:  ${join(dir, "data")}`);
    expect(out).toContain(`steward register --handlers none ${entry}`);
    const { hub } = run;

    // The installation has the app's grant: issues are delivered, and the app may comment.
    const installation = await post(hub, "installation", { args: ["acme"] });
    expect(installation.body.result.events).toEqual(expect.arrayContaining(["issues", "issue_comment"]));
    expect(installation.body.result.permissions).toMatchObject({ issues: "write" });

    const opened = await post(hub, "openIssue", { owner: "acme", repo: "web", title: "Hello" });
    expect(opened.status).toBe(200);
    const number = opened.body.result.number as number;
    // Read the comment back through the REST API as the repository's member would.
    const comments = await pollUntil(
      () => readAs(hub, "dev-dana", `/repos/acme/web/issues/${number}/comments`),
      (c: { body: string; user: { login: string } }[]) => c.some((x) => x.body === "Thanks for opening this issue!"),
      "the app's comment",
      run.out,
    );
    expect(comments[0]!.user.login).toMatch(/\[bot\]$/);

    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  }, 180_000);

  it("refuses a path that is not there, naming it", async () => {
    const run = startChild({}, ["run", "./no-such-app.js"]);
    expect(await run.exited).toBe(2);
    expect(run.out()).toContain("steward run: no such file: ./no-such-app.js");
  }, 120_000);
});
