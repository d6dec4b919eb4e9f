// `steward run ./index.js` (Probot's `probot run` habit) with no APP_ID: a Probot app in a package
// of its own, with its own app.yml asking for `issues` and `issue_comment`, runs in the sandbox
// installed with that grant; an issue opened through the hub's control surface gets the app's
// comment, and the banner says what is hosted, where the data is and how to register the app.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startChild } from "../service/child.js";
import { until } from "../lifecycle/support.js";

let dir: string | undefined;
let stop: (() => void) | undefined;
afterEach(async () => {
  stop?.();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = stop = undefined;
});

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

const post = async (hub: string, fn: string, body: unknown) => {
  const res = await fetch(`${hub}/_sandbox/control/${fn}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { result?: any; message?: string } };
};

describe("steward run APP (no APP_ID)", () => {
  it("hosts a Probot app with its own app.yml's grant: it comments on an issue opened in the sandbox", async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-run-"));
    const entry = await probotPackage(join(dir, "greeter"));
    const run = startChild(
      { PORT: "0", STEWARD_DATA_DIR: join(dir, "data"), STEWARD_SHUTDOWN_TIMEOUT: "2s", LOG_LEVEL: "info" },
      ["run", entry],
    );
    stop = () => run.proc.exitCode === null && run.proc.kill("SIGKILL");
    await until(() => run.out().includes("(202: recorded"), "the banner", run.out);
    const out = run.out();
    expect(out).toContain("running against the SANDBOX hub");
    expect(out).toMatch(/hosting:\s+\S+index\.js \(its \S*app\.yml: events issues, issue_comment\)/);
    expect(out).toContain("none (STEWARD_BUILTIN_HANDLERS=none)");
    expect(out).toContain(`data directory:  ${join(dir, "data")}`);
    expect(out).toContain(`steward register --handlers none ${entry}`);
    const hub = /hub \(REST API\):\s+(http:\/\/\S+)/.exec(out)![1]!;

    // The installation has the app's grant: issues are delivered, and the app may comment.
    const installation = await post(hub, "installation", { args: ["acme"] });
    expect(installation.body.result.events).toEqual(expect.arrayContaining(["issues", "issue_comment"]));
    expect(installation.body.result.permissions).toMatchObject({ issues: "write" });

    const opened = await post(hub, "openIssue", { owner: "acme", repo: "web", title: "Hello" });
    expect(opened.status).toBe(200);
    const number = opened.body.result.number as number;
    // Read the comment back through the REST API as the repository's member would.
    let commentsSeen = "";
    const token = (await post(hub, "userToken", { args: ["dev-dana"] })).body.result as string;
    await until(
      () => {
        void fetch(`${hub}/repos/acme/web/issues/${number}/comments`, { headers: { Authorization: `token ${token}` } })
          .then((r) => r.text())
          .then((t) => (commentsSeen = t))
          // A poll that fails (the service stopping while one is under way) is just not counted.
          .catch(() => undefined);
        return /Thanks for opening this issue!/.test(commentsSeen);
      },
      "the app's comment",
      () => `${commentsSeen}\n${run.out()}`,
      200,
    );
    expect(JSON.parse(commentsSeen)[0].user.login).toMatch(/\[bot\]$/);

    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  }, 180_000);

  it("refuses a path that is not there, naming it", async () => {
    const run = startChild({}, ["run", "./no-such-app.js"]);
    expect(await run.exited).toBe(2);
    expect(run.out()).toContain("steward run: no such file: ./no-such-app.js");
  }, 120_000);
});
