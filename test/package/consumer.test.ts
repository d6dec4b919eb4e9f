// A package outside this repository installs Steward from its path and uses it as a handler
// author would: `import { defineHandler } from "steward"` in an ES module, its types through
// `exports`, and a plain error from `require("steward")`. Steward is built into a scratch copy
// (not the checkout's dist/, which other tests' child processes may be running).
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
let scratch: string;
let consumer: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "steward-consumer-"));
  const pkg = join(scratch, "steward");
  mkdirSync(pkg);
  for (const f of ["package.json", "app.yml", "cjs", "bin"]) cpSync(join(root, f), join(pkg, f), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(pkg, "node_modules"));
  await run(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", join(pkg, "dist")], {
    cwd: root,
  });

  consumer = join(scratch, "my-handlers");
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, "package.json"),
    JSON.stringify({ name: "my-handlers", version: "1.0.0", type: "module" }),
  );
  // Offline and without scripts: the dependency is a local path and is already built above.
  await run("npm", ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", pkg], { cwd: consumer });
}, 300_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("steward as a dependency of another package", () => {
  it("imports the public API from an ES module", async () => {
    writeFileSync(
      join(consumer, "check.js"),
      [
        'import { defineHandler, matchesAny } from "steward";',
        'import { POLICY_FILE } from "steward/policy";',
        'const h = defineHandler({ name: "hello", events: ["issues.opened"], async handle() { return { status: "done" }; } });',
        'console.log(JSON.stringify({ name: h.name, glob: matchesAny(["main"], "main"), file: POLICY_FILE }));',
      ].join("\n"),
    );
    const { stdout } = await run(process.execPath, ["check.js"], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual({ name: "hello", glob: true, file: ".github/steward.yml" });
  });

  it("runs the steward bin from dist/ (the scratch copy has no TypeScript sources to fall back to)", async () => {
    const { stdout } = await run(process.execPath, [join(consumer, "node_modules", ".bin", "steward"), "--help"], {
      cwd: consumer,
    });
    expect(stdout).toContain("usage: steward <command>");
  });

  it("refuses require() with an error that says what to do", async () => {
    writeFileSync(join(consumer, "legacy.cjs"), 'require("steward");\n');
    const failed = (await run(process.execPath, ["legacy.cjs"], { cwd: consumer }).catch((e: unknown) => e)) as {
      stderr: string;
    };
    expect(failed.stderr).toContain("steward is an ES module package and cannot be loaded with require()");
    expect(failed.stderr).toContain('await import("steward")');
  });

  it("type-checks a handler through the package's declarations, and rejects a wrong one", async () => {
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        include: ["*.ts"],
      }),
    );
    writeFileSync(
      join(consumer, "handler.ts"),
      [
        'import { defineHandler, type Outcome } from "steward";',
        "export default defineHandler({",
        '  name: "label-bugs",',
        '  events: ["issues.opened"],',
        "  async handle(ctx): Promise<Outcome> {",
        "    const title: string = ctx.payload.issue.title;",
        '    return { status: "skipped", reason: title };',
        "  },",
        "});",
      ].join("\n"),
    );
    // The README's example handler, exactly as printed.
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const example = /## Writing a handler module[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)![1]!;
    writeFileSync(join(consumer, "readme-example.ts"), example);
    await run(process.execPath, [tsc, "-p", "."], { cwd: consumer });

    // The payload is typed from the event name: an issues.opened handler has no workflow_run.
    writeFileSync(
      join(consumer, "wrong.ts"),
      'import { defineHandler } from "steward";\nexport default defineHandler({ name: "w", events: ["issues.opened"], async handle(ctx) { ctx.payload.workflow_run; } });\n',
    );
    const failed = (await run(process.execPath, [tsc, "-p", "."], { cwd: consumer }).catch((e: unknown) => e)) as {
      stdout: string;
    };
    expect(failed.stdout).toMatch(/wrong\.ts\(2,\d+\): error TS2339: Property 'workflow_run' does not exist/);
    rmSync(join(consumer, "wrong.ts"));
  }, 180_000);
});

describe("a handler author's own package, tested against the sandbox", () => {
  it("writes a typed handler and a test against the sandbox hub, and runs both", async () => {
    // The hub is its own package in the Steward checkout; an author installs it beside Steward.
    await run(
      "npm",
      [
        "install",
        "--offline",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--save-dev",
        join(root, "packages", "sandbox-hub"),
      ],
      { cwd: consumer },
    );
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          strict: true,
          outDir: "build",
          skipLibCheck: true,
          types: [],
        },
        include: ["label-bugs.ts"],
      }),
    );
    writeFileSync(
      join(consumer, "label-bugs.ts"),
      [
        'import { defineHandler } from "steward";',
        "export default defineHandler({",
        '  name: "label-bugs",',
        '  events: ["pull_request.opened"],',
        "  async handle(ctx) {",
        "    const { repository, pull_request: pr } = ctx.payload;",
        '    if (!pr.title.toLowerCase().includes("bug")) return { status: "skipped", reason: "not a bug" };',
        "    const where = { owner: repository.owner.login, repo: repository.name, issue_number: pr.number };",
        "    const labelled = await ctx.once(`bug-label:${repository.id}:${pr.number}`, {",
        '      run: async () => (await ctx.octokit.rest.issues.addLabels({ ...where, labels: ["bug"] })).data.length,',
        '      check: async () => ((await ctx.octokit.rest.issues.listLabelsOnIssue(where)).data.some((l) => l.name === "bug") ? 1 : undefined),',
        "    });",
        '    return { status: "done", summary: `labelled (${labelled.state})` };',
        "  },",
        "});",
      ].join("\n"),
    );
    await run(process.execPath, [tsc, "-p", "."], { cwd: consumer });
    writeFileSync(
      join(consumer, "label-bugs.test.mjs"),
      [
        'import { test } from "node:test";',
        'import assert from "node:assert/strict";',
        'import { startSandboxStack, outcomeOf } from "steward/testing";',
        'import labelBugs from "./build/label-bugs.js";',
        'test("labels a bug fix pull request", async () => {',
        "  const stack = await startSandboxStack({ handlers: [labelBugs] });",
        "  try {",
        '    const pr = stack.hub.control.openPullRequest({ owner: "acme", repo: "web", head: "fix-crash", title: "Fix bug: crash on start", files: { "a.txt": "x\\n" } });',
        "    await stack.hub.control.settled();",
        '    const delivery = stack.hub.control.deliveries().find((d) => d.event === "pull_request" && d.payload.number === pr.number);',
        '    const outcome = await outcomeOf(stack, delivery.guid, "label-bugs");',
        '    assert.equal(outcome.status, "done");',
        '    const labels = stack.hub.control.effects.filter((e) => e.kind === "issues.labeled" && e.detail.number === pr.number);',
        '    assert.deepEqual(labels.map((e) => e.detail.label), ["bug"]);',
        "  } finally {",
        "    await stack.close();",
        "  }",
        "});",
      ].join("\n"),
    );
    // TAP named: Node 20 reports in TAP when not on a terminal, Node 24 in its "spec" format.
    const { stdout } = await run(process.execPath, ["--test", "--test-reporter=tap", "label-bugs.test.mjs"], {
      cwd: consumer,
    });
    expect(stdout).toMatch(/# pass 1\b/);
    expect(stdout).toMatch(/# fail 0\b/);
  }, 240_000);
});
