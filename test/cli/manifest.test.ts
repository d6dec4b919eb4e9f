// `steward manifest`: the app manifest with only what the enabled handlers need. app.yml is the
// manifest for every built-in handler plus `issues: write` (for modules you add), kept equal here;
// each built-in handler's demo scenario plays through a sandbox hub that grants only what the
// manifest for that handler alone asks for, and a grant one permission short is refused.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { builtinHandlers } from "../../handlers/index.js";
import { run as runManifest, buildManifest, parseManifestArgs } from "../../src/cli/commands/manifest.js";
import { appNeeds, selectBuiltins, type AppNeeds } from "../../src/cli/register/least-privilege.js";
import { startSandboxStack } from "../../src/sandbox/stack.js";
import type { Scenario } from "../../src/sandbox/demo/types.js";
import rerunScenario from "../../src/sandbox/demo/scenarios/rerun.js";
import deploymentsScenario from "../../src/sandbox/demo/scenarios/deployments.js";
import configScenario from "../../src/sandbox/demo/scenarios/config.js";
import secretsScenario from "../../src/sandbox/demo/scenarios/secrets.js";

const appYml = parse(readFileSync(join(import.meta.dirname, "../../app.yml"), "utf8")) as {
  default_events: string[];
  default_permissions: Record<string, string>;
};
const dir = mkdtempSync(join(tmpdir(), "steward-manifest-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const needsOf = (list: string, reviewer = true): AppNeeds =>
  appNeeds({ builtins: selectBuiltins(list, builtinHandlers), reviewer });

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const o = vi.spyOn(process.stdout, "write").mockImplementation((c) => ((out += String(c)), true));
  const e = vi.spyOn(process.stderr, "write").mockImplementation((c) => ((err += String(c)), true));
  try {
    return { code: await runManifest(args, env), out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

describe("least-privilege manifests", () => {
  it("app.yml is the manifest for every built-in handler, plus issues: write for modules you add", () => {
    const all = needsOf("all");
    expect([...appYml.default_events].sort()).toEqual(all.default_events);
    expect(appYml.default_permissions).toEqual({ ...all.default_permissions, issues: "write" });
  });

  it("each handler set gets only its own events and permissions", () => {
    const rerun = needsOf("rerun");
    // A failed job's log is read with its run's decision, so re-runs need no workflow_job deliveries.
    expect(rerun.default_events).toEqual(["merge_group", "push", "workflow_run"]);
    expect(rerun.default_permissions).toEqual({
      actions: "write",
      checks: "write",
      contents: "read",
      merge_queues: "read",
      metadata: "read",
      pull_requests: "read",
    });

    const deployments = needsOf("deployments", false);
    expect(deployments.default_events).not.toContain("workflow_run"); // without a reviewer token, never taken
    expect(deployments.default_permissions).toMatchObject({ deployments: "write", actions: "read", checks: "read" });
    expect(needsOf("deployments", true).default_events).toEqual(
      expect.arrayContaining(["workflow_run", "workflow_job"]),
    );

    const checks = needsOf("checks");
    expect(checks.default_permissions).toEqual({
      checks: "write",
      contents: "read",
      merge_queues: "read",
      metadata: "read",
      pull_requests: "read",
    });
    for (const set of [rerun, deployments, checks, needsOf("secrets"), needsOf("all")]) {
      expect(set.default_permissions.issues).toBeUndefined();
      expect(set.default_permissions.administration).toBeUndefined();
    }
    expect(needsOf("rerun,checks").default_permissions.secrets).toBeUndefined();
    expect(() => needsOf("rerun,labels")).toThrow(
      /unknown handler "labels" \(built-in handlers: rerun, deployments, checks, secrets; or all, none\)/,
    );
  });

  it("a module in STEWARD_HANDLERS adds its events and declared permissions; a Probot app is named as undeclared", async () => {
    const labeller = join(dir, "labeller.mjs");
    writeFileSync(
      labeller,
      `export default { name: "labeller", events: ["issues.opened", "issue_comment.created"], permissions: { issues: "write" }, async handle() {} };\n`,
    );
    const probotApp = join(dir, "probot-app.cjs");
    writeFileSync(probotApp, `module.exports = (app) => { app.on("issues.opened", async () => {}); };\n`);

    const without = await buildManifest(parseManifestArgs(["--handlers", "rerun"]) as never, {});
    expect((without.manifest.default_permissions as Record<string, string>).issues).toBeUndefined();

    const withModule = await buildManifest(parseManifestArgs(["--handlers", "rerun"]) as never, {
      STEWARD_HANDLERS: `${labeller},${probotApp}`,
    });
    expect(withModule.manifest.default_permissions).toMatchObject({ issues: "write", actions: "write" });
    expect(withModule.manifest.default_events).toEqual(
      expect.arrayContaining(["issues", "issue_comment", "workflow_run"]),
    );
    expect(withModule.undeclared).toEqual([
      `${probotApp} declares no events: a Probot app declares them in an app.yml next to its entry file or at its package root`,
    ]);

    // The same app with its own app.yml (as a Probot app ships it): its events and permissions are merged in.
    const ownDir = join(dir, "own-app");
    mkdirSync(join(ownDir, "lib"), { recursive: true });
    writeFileSync(join(ownDir, "package.json"), JSON.stringify({ name: "own-app", main: "lib/index.cjs" }));
    writeFileSync(
      join(ownDir, "app.yml"),
      "default_events:\n  - issue_comment\ndefault_permissions:\n  issues: write\n  pull_requests: read\n",
    );
    const ownApp = join(ownDir, "lib", "index.cjs");
    writeFileSync(ownApp, `module.exports = (app) => { app.on("issue_comment.created", async () => {}); };\n`);
    const withOwn = await buildManifest(parseManifestArgs(["--handlers", "none"]) as never, {
      STEWARD_HANDLERS: ownApp,
    });
    expect(withOwn.undeclared).toEqual([]);
    expect(withOwn.manifest.default_events).toEqual(["issue_comment", "push"]);
    expect(withOwn.manifest.default_permissions).toEqual({
      contents: "read",
      issues: "write",
      metadata: "read",
      pull_requests: "read",
    });

    const missing = await buildManifest(parseManifestArgs([]) as never, { STEWARD_HANDLERS: join(dir, "gone.mjs") });
    expect(missing.undeclared).toEqual([expect.stringMatching(/gone\.mjs could not be loaded: no such file/)]);
  });

  it("prints app.yml's fields with the callback URL, webhook URL and hand-added permissions", async () => {
    const { code, out } = await cli(
      [
        "--handlers",
        "checks",
        "--permission",
        "statuses=read",
        "--event",
        "status",
        "--webhook-url",
        "https://hooks.example.com/api/github/webhooks",
      ],
      { STEWARD_STATUS_URL: "https://steward.internal.example.com/some/page" },
    );
    expect(code).toBe(0);
    const manifest = parse(out) as Record<string, any>;
    expect(manifest).toMatchObject({
      name: "Steward",
      url: "https://github.com/steward-app/steward",
      public: false,
      hook_attributes: { url: "https://hooks.example.com/api/github/webhooks", active: true },
      callback_urls: ["https://steward.internal.example.com/console/callback"],
    });
    expect(manifest.default_permissions).toEqual({
      checks: "write",
      contents: "read",
      merge_queues: "read",
      metadata: "read",
      pull_requests: "read",
      statuses: "read",
    });
    expect(manifest.default_events).toEqual([
      "check_run",
      "check_suite",
      "merge_group",
      "pull_request",
      "push",
      "status",
    ]);

    const bad = await cli(["--handlers", "nope"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/unknown handler "nope"/);
    expect((await cli(["--permission", "issues=admin"])).code).toBe(2);
  });
});

// Each built-in handler's demo, alone, against a hub granting exactly its manifest.
const SCENARIOS: [string, Scenario][] = [
  ["rerun", rerunScenario],
  ["deployments", deploymentsScenario],
  ["checks", configScenario],
  ["secrets", secretsScenario],
];

async function playWithGrant(
  handler: string,
  scenario: Scenario,
  needs: Pick<AppNeeds, "default_events" | "default_permissions">,
) {
  const stack = await startSandboxStack({
    handlers: selectBuiltins(handler, builtinHandlers),
    hub: {
      app: { permissions: needs.default_permissions as Record<string, "read" | "write">, events: needs.default_events },
    },
    logger: pino({ level: "silent" }),
  });
  try {
    // A scenario whose handler was refused throws (it did not see what it waited for): its refusals are the answer.
    const rows = await scenario.run(stack, () => {}).catch((e: Error) => e);
    await stack.hub.control.settled();
    const refused = stack.hub.control
      .requests()
      .filter((r) => r.status === 403 && r.auth === "installation")
      .map((r) => `${r.method} ${r.route ?? r.path}`);
    return { rows, refused };
  } finally {
    await stack.close();
  }
}

describe("each built-in handler works with its own manifest's grant alone", () => {
  it.each(SCENARIOS)(
    "%s",
    async (handler, scenario) => {
      const { rows, refused } = await playWithGrant(handler, scenario, needsOf(handler));
      expect(refused).toEqual([]);
      if (rows instanceof Error) throw rows;
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(String(row.result)).not.toMatch(/^failed/);
    },
    120_000,
  );

  it("and a grant one permission short is refused (rerun without actions: write)", async () => {
    const needs = needsOf("rerun");
    const { rows, refused } = await playWithGrant("rerun", rerunScenario, {
      ...needs,
      default_permissions: { ...needs.default_permissions, actions: "read" },
    });
    expect(rows).toBeInstanceOf(Error);
    expect(refused).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^POST \/repos\/\{owner\}\/\{repo\}\/actions\/(runs|jobs)\/\{\w+\}\/rerun/),
      ]),
    );
  }, 120_000);
});

describe("steward register takes the same flags", () => {
  it("parses --handlers, --permission, --event and --console-url beside its own", async () => {
    const { parseRegisterArgs } = await import("../../src/cli/commands/register.js");
    expect(
      parseRegisterArgs([
        "--port",
        "0",
        "--handlers",
        "rerun,checks",
        "--permission=issues=write",
        "--event",
        "issues",
        "--console-url",
        "https://steward.example.com",
      ]),
    ).toMatchObject({
      port: 0,
      handlers: "rerun,checks",
      permissions: { issues: "write" },
      events: ["issues"],
      consoleUrl: "https://steward.example.com",
    });
    expect(parseRegisterArgs(["--permission", "issues"])).toMatch(/--permission must be NAME=read or NAME=write/);
  });
});
