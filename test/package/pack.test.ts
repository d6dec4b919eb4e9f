// Steward as a packed package: `npm pack` builds dist/ (its `prepack` script) and ships the compiled
// output; a project installs the tarball with production dependencies only and runs the `steward`
// bin from it, hosting a Probot app against a hub as a production install would. Installing
// Steward from a path, scripts enabled, leaves the source tree's dist/ as it was (no `prepare`).
// A handler author's package depends on it from a path and type-checks against its declarations.
//
// Everything happens in a scratch copy of the checkout (the checkout's dist/ may be in use by
// other tests' child processes). Offline and on 127.0.0.1 only: the project's lockfile is made from
// this checkout's, its production entries only, so `npm ci --offline` takes every package from the
// npm cache that installing this checkout filled, at the versions this checkout runs.
// better-sqlite3's install script (a compile from source offline) is skipped and its compiled
// binary taken from the checkout's install: the same package version, built for this Node.
import { execFile } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { realAppEnv, startChild } from "../service/child.js";
import { perTest } from "../service/per-test.js";
import { until } from "../lifecycle/support.js";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const scope = perTest();
let scratch: string;
let source: string;
let tarball: string;
let project: string;

interface LockEntry {
  dev?: boolean;
  link?: boolean;
  [key: string]: unknown;
}

/** A lockfile for `project` depending on the tarball, with the checkout's production packages. */
function projectLockfile(pkg: { version: string; dependencies: Record<string, string>; bin: unknown }, file: string) {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, LockEntry>;
  };
  const packages: Record<string, unknown> = {
    "": { name: "my-app", version: "1.0.0", dependencies: { steward: `file:${file}` } },
    "node_modules/steward": {
      version: pkg.version,
      resolved: `file:${file}`,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages))
    if (path.startsWith("node_modules/") && !entry.dev && !entry.link) packages[path] = entry;
  return { name: "my-app", version: "1.0.0", lockfileVersion: 3, requires: true, packages };
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "steward-pack-"));
  source = join(scratch, "steward");
  mkdirSync(source);
  for (const f of [
    "package.json",
    "README.md",
    "app.yml",
    "bin",
    "cjs",
    "scripts",
    "src",
    "handlers",
    "tsconfig.json",
    "tsconfig.build.json",
  ])
    cpSync(join(root, f), join(source, f), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(source, "node_modules"));
  // prepack compiles dist/ here (the hub's folder is not copied: it is built by its own package).
  const packed = await run("npm", ["pack", "--json", "--pack-destination", scratch], {
    cwd: source,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  tarball = join(scratch, filename);

  project = join(scratch, "my-app");
  mkdirSync(project);
  cpSync(tarball, join(project, filename));
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "my-app", version: "1.0.0", type: "module", dependencies: { steward: `file:${filename}` } }),
  );
  const pkg = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
  writeFileSync(join(project, "package-lock.json"), JSON.stringify(projectLockfile(pkg, filename), null, 1));
  await run("npm", ["ci", "--offline", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"], {
    cwd: project,
    maxBuffer: 64 * 1024 * 1024,
  });
  const binary = join("node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node");
  cpSync(join(root, binary), join(project, binary));
}, 900_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 300_000);

describe("npm pack", () => {
  it("builds in prepack, never on install: no prepare/install script", () => {
    const { scripts } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(scripts.prepack).toBe("node scripts/build.mjs");
    for (const hook of ["prepare", "preinstall", "install", "postinstall"]) expect(scripts[hook]).toBeUndefined();
  });

  it("ships the compiled output, the bin and app.yml, and no sources or tests", async () => {
    const { stdout } = await run("tar", ["-tzf", tarball], { maxBuffer: 64 * 1024 * 1024 });
    const files = stdout.split("\n").filter(Boolean);
    for (const f of ["package/package.json", "package/app.yml", "package/bin/steward.js", "package/cjs/steward.cjs"])
      expect(files).toContain(f);
    expect(files).toContain("package/dist/src/cli/main.js");
    expect(files).toContain("package/dist/src/testing.d.ts");
    expect(files.filter((f) => /\.ts$/.test(f) && !f.endsWith(".d.ts"))).toEqual([]);
    expect(files.filter((f) => f.startsWith("package/test/") || f.startsWith("package/src/"))).toEqual([]);
  });
});

describe("a project that installed the tarball with production dependencies only", () => {
  it("has no development dependency to fall back on", () => {
    for (const dev of ["typescript", "tsx", "vitest", "@steward/sandbox-hub"])
      expect(existsSync(join(project, "node_modules", dev)), dev).toBe(false);
    expect(existsSync(join(project, "node_modules", "steward", "dist", "src", "cli", "main.js"))).toBe(true);
  });

  it("runs `steward --help` from node_modules/.bin", async () => {
    const { stdout } = await run(join(project, "node_modules", ".bin", "steward"), ["--help"], { cwd: project });
    expect(stdout).toContain("usage: steward <command>");
  });

  it("hosts a Probot app with `steward run` against a hub: the app comments on an opened issue", async () => {
    const hub = await scope.hub({
      app: { events: ["issues"], permissions: { metadata: "read", contents: "read", issues: "write" } },
    });
    const dir = await scope.dataDir("pack-run");
    writeFileSync(
      join(project, "app.js"),
      [
        "export default (app) => {",
        '  app.on("issues.opened", async (context) => {',
        '    await context.octokit.issues.createComment(context.issue({ body: "hello from a packed Steward" }));',
        "  });",
        "};",
        "",
      ].join("\n"),
    );
    const child = scope.stopAfter(
      startChild(
        {
          ...(await realAppEnv(hub, dir, hub.env.WEBHOOK_SECRET)),
          NODE_ENV: "production",
          STEWARD_SHUTDOWN_TIMEOUT: "5s",
          LOG_LEVEL: "info",
        },
        ["run", "./app.js"],
        { bin: join(project, "node_modules", "steward", "bin", "steward.js"), cwd: project },
      ),
      (c) => c.proc.exitCode === null && c.proc.kill("SIGKILL"),
    );
    const url = await child.listening;
    hub.control.setWebhookUrl(`${url}/api/github/webhooks`);
    const issue = hub.control.openIssue({ owner: "acme", repo: "web", title: "Hello" });
    await until(
      () =>
        hub.control.effects.some(
          (e) => e.kind === "issues.commented" && (e.detail as { number?: number }).number === issue.number,
        ),
      "the app's comment",
      () => `${JSON.stringify(hub.control.effects.map((e) => e.kind))}\n${child.out()}`,
      200,
    );
    child.proc.kill("SIGTERM");
    expect(await child.exited).toBe(0);
  }, 180_000);
});

describe("installing Steward from a path", () => {
  it("leaves the source tree's dist/ untouched (no build runs in it), scripts enabled", async () => {
    const main = join(source, "dist", "src", "cli", "main.js");
    const before = statSync(main);
    const consumer = join(scratch, "by-path");
    mkdirSync(consumer);
    writeFileSync(
      join(consumer, "package.json"),
      JSON.stringify({ name: "by-path", version: "1.0.0", type: "module" }),
    );
    await run("npm", ["install", "--offline", "--no-audit", "--no-fund", source], { cwd: consumer });
    await run("npm", ["install", "--offline", "--no-audit", "--no-fund"], { cwd: consumer });
    const after = statSync(main);
    expect({ ino: after.ino, mtime: after.mtimeMs }).toEqual({ ino: before.ino, mtime: before.mtimeMs });
    const { stdout } = await run(join(consumer, "node_modules", ".bin", "steward"), ["--help"], { cwd: consumer });
    expect(stdout).toContain("usage: steward <command>");
  }, 300_000);
});

describe("steward new: a new app's package, its generated test run as its author runs it", () => {
  /**
   * Scaffolds with the checkout's bin, then links what `npm install` would put in node_modules:
   * Steward (the scratch copy built by `npm pack` above: the checkout's own dist/ is not built in a
   * test), the hub from the checkout, and vitest and TypeScript from the checkout's install.
   */
  async function scaffold(name: string, flags: string[]): Promise<string> {
    const dir = join(scratch, name);
    const made = await run(process.execPath, [join(root, "bin", "steward.js"), "new", dir, ...flags], { cwd: scratch });
    expect(made.stdout).toContain("npm test");
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(pkg.dependencies.steward).toBe(`file:${root}`);
    expect(pkg.devDependencies["@steward/sandbox-hub"]).toBe(`file:${join(root, "packages", "sandbox-hub")}`);
    mkdirSync(join(dir, "node_modules", "@steward"), { recursive: true });
    symlinkSync(source, join(dir, "node_modules", "steward"));
    symlinkSync(join(root, "packages", "sandbox-hub"), join(dir, "node_modules", "@steward", "sandbox-hub"));
    mkdirSync(join(dir, "node_modules", ".bin"));
    for (const dev of ["vitest", "typescript"])
      symlinkSync(join(root, "node_modules", dev), join(dir, "node_modules", dev));
    symlinkSync(join(root, "node_modules", "vitest", "vitest.mjs"), join(dir, "node_modules", ".bin", "vitest"));
    symlinkSync(join(root, "node_modules", "typescript", "bin", "tsc"), join(dir, "node_modules", ".bin", "tsc"));
    return dir;
  }

  /** `npm test` as generated: vitest with no configuration, so with its default timeouts. */
  async function npmTest(dir: string) {
    const result = await run("npm", ["test"], {
      cwd: dir,
      env: { ...process.env, CI: "1", NO_COLOR: "1" },
    }).catch((e: { stdout: string; stderr: string }) => e);
    return `${result.stdout}\n${result.stderr}`;
  }

  it("JavaScript: app.js, app.yml, .env.example and a test that passes against the sandbox", async () => {
    const dir = await scaffold("thanks-js", []);
    for (const f of ["app.js", "app.yml", "app.test.js", ".env.example", ".gitignore", "README.md"])
      expect(existsSync(join(dir, f)), f).toBe(true);
    expect(readFileSync(join(dir, "app.yml"), "utf8")).toMatch(/default_events:\n\s+- issues/);
    const out = await npmTest(dir);
    expect(out).toMatch(/Test Files\s+1 passed \(1\)/);
    expect(out).toMatch(/Tests\s+1 passed \(1\)/);
  }, 300_000);

  it("TypeScript: tsconfig.json compiles app.ts to dist/, which the passing test runs", async () => {
    const dir = await scaffold("thanks-ts", ["--typescript"]);
    const tsconfig = JSON.parse(readFileSync(join(dir, "tsconfig.json"), "utf8")) as {
      compilerOptions: { outDir: string };
    };
    expect(tsconfig.compilerOptions.outDir).toBe("dist");
    expect(readFileSync(join(dir, "app.test.ts"), "utf8")).toContain('apps: ["./dist/app.js"]');
    const out = await npmTest(dir);
    expect(existsSync(join(dir, "dist", "app.js"))).toBe(true);
    expect(out).toMatch(/Test Files\s+1 passed \(1\)/);
    expect(out).toMatch(/Tests\s+1 passed \(1\)/);
  }, 300_000);

  it("refuses a folder that is not empty, writing nothing", async () => {
    const dir = join(scratch, "taken");
    mkdirSync(dir);
    writeFileSync(join(dir, "keep.txt"), "mine\n");
    const failed = (await run(process.execPath, [join(root, "bin", "steward.js"), "new", dir]).catch(
      (e: unknown) => e,
    )) as { code: number; stderr: string };
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain("is not empty");
    expect(readdirSync(dir)).toEqual(["keep.txt"]);
  }, 120_000);
});

// A package outside this repository installs Steward from its path and uses it as a handler
// author would: `import { defineHandler } from "steward"` in an ES module, its types through
// `exports`, and a plain error from `require("steward")`. The path is a copy holding only what the
// package ships (no TypeScript sources to fall back to), with the dist/ that prepack compiled above:
// these tests share its build instead of compiling Steward again.
describe("Steward as another package's dependency, installed from a path", () => {
  let consumer: string;

  /** The consumer's tsconfig.json: strict NodeNext, as a handler author's package would have it. */
  function writeTsconfig(options: Record<string, unknown>, include: string[]) {
    const compilerOptions = { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true };
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { ...compilerOptions, ...options, skipLibCheck: true, types: [] }, include }),
    );
  }

  beforeAll(async () => {
    const pkg = join(scratch, "shipped");
    mkdirSync(pkg);
    for (const f of ["package.json", "app.yml", "cjs", "bin", "dist"])
      cpSync(join(source, f), join(pkg, f), { recursive: true });
    symlinkSync(join(root, "node_modules"), join(pkg, "node_modules"));
    consumer = join(scratch, "my-handlers");
    mkdirSync(consumer);
    writeFileSync(
      join(consumer, "package.json"),
      JSON.stringify({ name: "my-handlers", version: "1.0.0", type: "module" }),
    );
    // Offline and without scripts: the dependency is a local path and is already built.
    await run("npm", ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", pkg], { cwd: consumer });
  }, 300_000);

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
      writeTsconfig({ noEmit: true }, ["*.ts"]);
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
      writeTsconfig({ outDir: "build" }, ["label-bugs.ts"]);
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
});
