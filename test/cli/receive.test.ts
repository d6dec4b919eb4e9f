// `steward receive`: a payload file goes through the configured handlers (built-in and
// STEWARD_HANDLERS) once, against the in-process sandbox when APP_ID is unset, and each
// handler's outcome is printed; a failed handler makes the exit code 1.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { mkdir } from "node:fs/promises";
import { join, relative } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "./capture.js";
import { examplePayload } from "../engine/helpers.js";

const fixture = (name: string) => relative(process.cwd(), join(import.meta.dirname, "..", "engine", "fixtures", name));
const saved = {
  APP_ID: process.env.APP_ID,
  STEWARD_HANDLERS: process.env.STEWARD_HANDLERS,
  STEWARD_BUILTIN_HANDLERS: process.env.STEWARD_BUILTIN_HANDLERS,
};
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-receive-test-"));
  delete process.env.APP_ID;
  process.env.STEWARD_HANDLERS = [fixture("handler-module.ts"), fixture("probot-app.ts")].join(",");
});
afterEach(async () => {
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  await rm(dir, { recursive: true, force: true });
});

async function payloadFile(name: string, payload: unknown): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, typeof payload === "string" ? payload : JSON.stringify(payload));
  return file;
}

describe("steward receive", () => {
  it("prints each handler's outcome for the payload, and exits 0 when none failed", async () => {
    const file = await payloadFile("ping.json", examplePayload("ping"));
    const { code, out } = await runCli(["receive", "--event", "ping", "--payload", file]);
    expect(out).toMatch(/^extra: done \(pinged by [0-9a-f-]{36}\)$/m);
    expect(out).toMatch(/^probot-app: skipped \(the app does not listen to ping\)$/m);
    expect(code).toBe(0);
  }, 120_000);

  it("exits 1 and prints the error when a handler failed", async () => {
    const file = await payloadFile("push.json", examplePayload("push"));
    const { code, out } = await runCli(["receive", "--event=push", `--payload=${file}`]);
    expect(out).toMatch(/^probot-app: failed \(this app cannot handle pushes\)$/m);
    expect(code).toBe(1);
  }, 120_000);

  it("refuses bad arguments and unreadable or non-JSON payloads with a clear message", async () => {
    expect((await runCli(["receive", "--payload", "x.json"])).err).toMatch(/--event needs an event name/);
    expect((await runCli(["receive", "--event", "push"])).err).toMatch(/--payload needs a JSON file/);
    const missing = await runCli(["receive", "--event", "push", "--payload", join(dir, "nope.json")]);
    expect([missing.code, missing.err]).toEqual([1, expect.stringMatching(/cannot read .*nope\.json: ENOENT/)]);
    const broken = await runCli([
      "receive",
      "--event",
      "push",
      "--payload",
      await payloadFile("bad.json", "{not json"),
    ]);
    expect([broken.code, broken.err]).toEqual([1, expect.stringMatching(/bad\.json is not valid JSON/)]);
  });

  it("like probot receive: -e/-p and the app's path; the fixture's repository, installation and issue are made in the sandbox", async () => {
    delete process.env.STEWARD_HANDLERS;
    const app = join(dir, "greeter");
    await mkdir(app);
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "greeter", main: "index.js" }));
    await writeFile(join(app, "app.yml"), "default_events:\n  - issues\ndefault_permissions:\n  issues: write\n");
    await writeFile(
      join(app, "index.js"),
      [
        "module.exports = (app) => {",
        '  app.on("issues.opened", async (context) => {',
        '    await context.octokit.issues.createComment(context.issue({ body: "Thanks!" }));',
        "  });",
        '  app.on("issues.closed", async () => { throw new Error("closing is not handled"); });',
        "};",
      ].join("\n"),
    );
    // GitHub's own example: Codertocat/Hello-World, installation and issue numbers the sandbox never had.
    const opened = examplePayload("issues", "opened");
    const file = await payloadFile("issues.opened.json", opened);
    const { code, out, err } = await runCli(["receive", "-e", "issues", "-p", file, join(app, "index.js")]);
    expect(err).toBe("");
    expect(out).toContain(`sandbox: made repository ${opened.repository.full_name}`);
    expect(out).toMatch(/sandbox: installation \S+ -> \d+ \(the sandbox.s\)/);
    expect(out).toMatch(new RegExp(`sandbox: opened issue #\\d+ for the payload's #${opened.issue.number}`));
    expect(out).toMatch(/^greeter: done$/m);
    expect(out).not.toMatch(/^(rerun|deployments|checks|secrets):/m); // built-ins off with an app named
    expect(code).toBe(0);

    // A listener's failure is its message: never the payload Probot attaches to the error.
    const closed: Record<string, any> = { ...examplePayload("issues", "opened"), action: "closed" };
    const failed = await runCli([
      "receive",
      "-e",
      "issues",
      "-p",
      await payloadFile("closed.json", closed),
      join(app, "index.js"),
    ]);
    expect(failed.out).toMatch(/^greeter: failed \(closing is not handled\)$/m);
    expect(failed.code).toBe(1);
    expect(failed.out + failed.err).not.toContain(closed.repository.node_id);
  }, 120_000);
});
