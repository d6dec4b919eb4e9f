import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createChecksHandler } from "../../handlers/checks/index.js";
import secrets from "../../handlers/secrets/index.js";
import type { ChecksPolicy } from "../../handlers/checks/policy.js";
import type { StewardConfig } from "../../src/config/types.js";
import type { Store } from "../../src/store/types.js";
import { rerunLike, secretsLike } from "../policy/fixtures.js";
import { handlerContext, memoryStore } from "./context.js";
import { startFakeGitHub, type FakeGitHub } from "./fake-github.js";

const HEAD = "1".repeat(40);
const HEAD2 = "2".repeat(40);
const BASE = "0".repeat(40);
const FILE = ".github/steward.yml";
const handler = createChecksHandler({ handlers: async () => [rerunLike, secretsLike, handler] });

type Example = { name: string; examples: Record<string, any>[] };
const example = (name: string, action: string): Record<string, any> =>
  structuredClone((examples as unknown as Example[]).find((e) => e.name === name)!.examples.find((x) => x.action === action)!);

/** A real pull_request payload, moved to acme/REPO with the given head and base. */
function pullEvent(action: string, opts: { repo?: string; head?: string; number?: number; fork?: boolean } = {}) {
  const payload = example("pull_request", action);
  const repo = opts.repo ?? "web";
  payload.repository = { ...payload.repository, id: 500, name: repo, full_name: `acme/${repo}`, owner: { ...payload.repository.owner, login: "acme" } };
  payload.pull_request.number = opts.number ?? 7;
  payload.pull_request.head.sha = opts.head ?? HEAD;
  payload.pull_request.base.sha = BASE;
  payload.pull_request.base.ref = "main";
  payload.pull_request.base.repo = payload.repository;
  payload.pull_request.head.repo = opts.fork ? { ...payload.repository, id: 900, full_name: "mallory/web", owner: { login: "mallory" } } : payload.repository;
  return { name: "pull_request", payload };
}

let gh: FakeGitHub;
beforeEach(async () => {
  gh = await startFakeGitHub({ appId: 42 });
});
afterEach(() => gh.close());

const run = (event: { name: string; payload: Record<string, any> }, opts: { policy?: ChecksPolicy; store?: Store; config?: Partial<StewardConfig> } = {}) =>
  handler.handle(handlerContext<ChecksPolicy>(gh, handler, event, opts));

function stage(files: { path: string; status: "added" | "modified" | "removed" | "renamed"; head?: string; base?: string; previous_filename?: string }[], opts: { repo?: string; number?: number; head?: string } = {}) {
  const repo = opts.repo ?? "web";
  gh.setPullFiles("acme", repo, opts.number ?? 7, files.map((f) => ({ filename: f.path, status: f.status, ...(f.previous_filename ? { previous_filename: f.previous_filename } : {}) })));
  for (const f of files) {
    if (f.head !== undefined) gh.setFile("acme", repo, f.path, f.head, opts.head ?? HEAD);
    if (f.base !== undefined) gh.setFile("acme", repo, f.path, f.base, BASE);
  }
}

const annotationsAt = () => gh.runs.at(-1)!.annotations.map((a) => `${a.path}:${a.start_line}:${a.start_column} ${a.message}`);

describe("checks handler: steward/config", () => {
  it("fails a typo'd key and a bad glob with two annotations on the right lines, then goes green once fixed", async () => {
    const broken = "rerun:\n  max_atempts: 3\n  branches:\n    - main\n    - 'release/[0-9'\n";
    stage([{ path: FILE, status: "modified", head: broken, base: "rerun:\n  max_attempts: 2\n" }]);
    const outcome = await run(pullEvent("opened"));
    expect(outcome).toMatchObject({ status: "done" });
    expect(gh.runs).toHaveLength(1);
    expect(gh.runs[0]).toMatchObject({ name: "steward/config", head_sha: HEAD, status: "completed", conclusion: "failure" });
    expect(annotationsAt()).toEqual([
      `${FILE}:2:3 unknown key "max_atempts" in "rerun" (did you mean "max_attempts"?)`,
      `${FILE}:5:7 unclosed "[" in glob "release/[0-9"`,
    ]);
    expect(gh.runs[0]!.annotations.map((a) => a.annotation_level)).toEqual(["failure", "failure"]);

    const fixed = "rerun:\n  max_attempts: 3\n  branches:\n    - main\n    - 'release/*'\n";
    stage([{ path: FILE, status: "modified", head: fixed, base: "rerun:\n  max_attempts: 2\n" }], { head: HEAD2 });
    await run(pullEvent("synchronize", { head: HEAD2 }));
    const green = gh.runs.at(-1)!;
    expect(green).toMatchObject({ head_sha: HEAD2, conclusion: "success", annotations: [] });
    expect(green.output.summary).toContain("`rerun.max_attempts`: `2` → `3`");
    expect(green.output.summary).toContain('`rerun.branches`: `["main"]` → `["main","release/*"]`');
    expect(green.output.summary).toMatch(/```yaml\nrerun:\n {2}enabled: true\n {2}max_attempts: 3/);
  });

  it("reports every problem of a file as an annotation and in a summary table", async () => {
    stage([{ path: FILE, status: "added", head: "rerun:\n  enabld: true\n  branches: ['{a']\nchecks:\n  config: maybe\n" }]);
    await run(pullEvent("opened"));
    const r = gh.runs[0]!;
    expect(r.conclusion).toBe("failure");
    expect(annotationsAt()).toEqual([
      `${FILE}:2:3 unknown key "enabld" in "rerun" (did you mean "enabled"?)`,
      `${FILE}:3:14 unbalanced "{" "}" in glob "{a"`,
      `${FILE}:5:11 "checks.config" must be boolean (got string)`,
    ]);
    expect(r.output.title).toBe("3 problems in 1 policy file");
    expect(r.output.summary).toContain("| File | Line | Column | Severity | Problem |");
    expect(r.output.summary).toContain(`| \`${FILE}\` | 5 | 11 | error |`);
    expect(r.output.summary).toContain("`rerun`: **not applied**, it has errors.");
  });

  it("writes nothing for a pull request that touches no policy file", async () => {
    stage([{ path: "src/index.ts", status: "modified" }, { path: ".github/workflows/ci.yml", status: "modified" }, { path: ".github/steward/secrets.yml", status: "added" }]);
    const outcome = await run(pullEvent("opened"));
    expect(outcome).toMatchObject({ status: "done", summary: "#7: no policy file changed" });
    expect(gh.writes()).toEqual([]);
    expect(gh.requests.map((r) => r.path)).toEqual(["/repos/acme/web/pulls/7/files"]);
  });

  it("finds a policy file among many pages of changed files", async () => {
    const many = Array.from({ length: 250 }, (_, i) => ({ path: `src/f${i}.ts`, status: "modified" as const }));
    stage([...many, { path: FILE, status: "modified", head: "checks: {config: true}\n", base: "" }]);
    await run(pullEvent("opened"));
    expect(gh.runs[0]).toMatchObject({ conclusion: "success" });
    expect(gh.requests.filter((r) => r.path.endsWith("/pulls/7/files"))).toHaveLength(3);
  });

  it("reads a fork's files from the base repository at the head commit, and says so", async () => {
    stage([{ path: FILE, status: "modified", head: "checks:\n  config: false\n", base: "" }]);
    await run(pullEvent("opened", { fork: true }));
    expect(gh.runs[0]).toMatchObject({ conclusion: "success", owner: "acme", repo: "web" });
    expect(gh.runs[0]!.output.summary).toContain("comes from a fork");
    const reads = gh.requests.filter((r) => r.path.includes("/contents/"));
    expect(reads.every((r) => r.path.startsWith("/repos/acme/"))).toBe(true);
    expect(reads.some((r) => r.path === `/repos/acme/web/contents/${FILE}` && r.query.get("ref") === HEAD)).toBe(true);
  });

  it("uses the base branch's own policy to decide, never the pull request's: checks.config false skips", async () => {
    stage([{ path: FILE, status: "modified", head: "rerun: {enabled: 1}\n", base: "" }]);
    const outcome = await run(pullEvent("opened"), { policy: { config: false } });
    expect(outcome).toEqual({ status: "skipped", reason: "checks.config is false" });
    expect(gh.requests).toEqual([]);
  });

  it("reports a deleted policy file as a fall-back to the org file and defaults", async () => {
    gh.setFile("acme", ".github", FILE, "rerun:\n  max_attempts: 5\n");
    stage([{ path: FILE, status: "removed", base: "rerun:\n  max_attempts: 3\n" }]);
    await run(pullEvent("opened"));
    const r = gh.runs[0]!;
    expect(r).toMatchObject({ conclusion: "success", annotations: [] });
    expect(r.output.summary).toContain("Removed: the repository falls back to the organisation's file in `acme/.github` and the defaults.");
    expect(r.output.summary).toContain("`rerun.max_attempts`: `3` → `5`");
  });

  it("annotates a file that is not valid YAML at the syntax error", async () => {
    stage([{ path: FILE, status: "modified", head: "rerun:\n  branches: [main\nchecks: {}\n", base: "" }]);
    await run(pullEvent("opened"));
    const r = gh.runs[0]!;
    expect(r.conclusion).toBe("failure");
    expect(r.annotations.length).toBeGreaterThan(0);
    expect(r.annotations.every((a) => String(a.message).startsWith("YAML syntax error") && (a.start_line as number) >= 2)).toBe(true);
  });

  it("merges over the org file as the loader does, and shows problems of the org file without failing", async () => {
    gh.setFile("acme", ".github", FILE, "rerun:\n  max_attempts: 4\nchecks:\n  confg: true\n");
    stage([{ path: FILE, status: "modified", head: "rerun:\n  branches: [trunk]\n", base: "" }]);
    await run(pullEvent("opened"));
    const r = gh.runs[0]!;
    expect(r.conclusion).toBe("success");
    expect(r.annotations).toEqual([]);
    expect(r.output.summary).toContain("merged over `acme/.github`");
    expect(r.output.summary).toMatch(/max_attempts: 4\n {2}branches:\n {4}- trunk/);
    expect(r.output.summary).toContain('`acme/.github:.github/steward.yml:4:3`: unknown key "confg"');
  });

  it("validates an org-level file and admin documents changed in the admin repository", async () => {
    stage(
      [
        { path: FILE, status: "modified", head: "rerun:\n  max_attempts: 4\n", base: "rerun:\n  max_attempts: 2\n" },
        { path: ".github/steward/secrets.yml", status: "added", head: "secrets:\n  - name: npm_token\n    repositories: ['*']\n" },
        { path: ".github/steward/secret.yml", status: "added", head: "a: 1\n" },
      ],
      { repo: ".github" },
    );
    await run(pullEvent("opened", { repo: ".github" }));
    const r = gh.runs[0]!;
    expect(r.conclusion).toBe("failure");
    expect(annotationsAt()).toEqual([
      '.github/steward/secret.yml:1:1 ".github/steward/secret.yml" is not a Steward policy document (did you mean ".github/steward/secrets.yml"?)',
      '.github/steward/secrets.yml:2:11 "secrets.0.name" must match pattern "^[A-Z_][A-Z0-9_]*$"',
    ]);
    expect(r.output.summary).toContain("`rerun.max_attempts`: `2` → `4`");
    // The admin repository's own file is the org file: nothing is read from elsewhere.
    expect(gh.requests.filter((q) => q.path.includes("/contents/")).every((q) => q.path.startsWith("/repos/acme/.github/"))).toBe(true);
  });

  it("validates a fork's secrets.yml for structure only: its run is the same whatever the host holds", async () => {
    const withSecrets = createChecksHandler({ handlers: async () => [secrets, withSecrets] });
    const VAR = "STEWARD_CHECKS_FORK_PROBE";
    const dir = await mkdtemp(join(tmpdir(), "steward-checks-fork-"));
    const file = join(dir, "deploy_key");
    const DOC = ".github/steward/secrets.yml";
    const text = `secrets:\n  TOKEN:\n    from: env:${VAR}\n    repositories: [web]\n  KEY:\n    from: file:${file}\n    repositories: ["[x"]\n`;
    const runFor = async (head: string, number: number, fork: boolean) => {
      stage([{ path: DOC, status: "added", head: text }], { repo: ".github", head, number });
      await withSecrets.handle(handlerContext<ChecksPolicy>(gh, withSecrets, pullEvent("opened", { repo: ".github", head, number, fork })));
      const r = gh.runs.find((x) => x.head_sha === head)!;
      return { conclusion: r.conclusion, title: r.output.title, summary: r.output.summary, text: r.output.text, annotations: r.annotations };
    };
    try {
      delete process.env[VAR];
      const absent = await runFor("a".repeat(40), 1, true);
      process.env[VAR] = "probe-value-present";
      await writeFile(file, "probe-file-content\n");
      const present = await runFor("b".repeat(40), 2, true);
      expect(JSON.stringify(present)).toBe(JSON.stringify(absent));
      expect(absent.conclusion).toBe("failure");
      expect(absent.annotations.map((a) => a.message)).toEqual(['unclosed "[" in glob "[x"']);
      expect(absent.summary).toContain("validated for structure only");

      // A pull request from the repository itself is validated the same way: validation never
      // looks at the host (only a plan resolves, and says "not available" for whatever it cannot read).
      delete process.env[VAR];
      await rm(file);
      const sameRepo = await runFor("c".repeat(40), 3, false);
      expect(sameRepo.annotations.map((a) => a.message)).toEqual(['unclosed "[" in glob "[x"']);
    } finally {
      delete process.env[VAR];
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("sends 51 problems as 50 with the create and 1 with an update", async () => {
    const keys = Array.from({ length: 51 }, (_, i) => `  unknown_${i}: 1`).join("\n");
    stage([{ path: FILE, status: "modified", head: `rerun:\n${keys}\n`, base: "" }]);
    await run(pullEvent("opened"));
    expect(gh.writes().map((w) => `${w.method} ${w.body.output.annotations.length}`)).toEqual(["POST 50", "PATCH 1"]);
    expect(gh.runs[0]!.annotations).toHaveLength(51);
  });

  it("cuts a summary over the size limit with a note instead of failing the request", async () => {
    const branches = Array.from({ length: 4000 }, (_, i) => `    - release/branch-number-${i}`).join("\n");
    stage([{ path: FILE, status: "modified", head: `rerun:\n  branches:\n${branches}\n`, base: "" }]);
    await run(pullEvent("opened"), { config: { statusUrl: "https://steward.example/status" } });
    const r = gh.runs[0]!;
    expect(r.conclusion).toBe("success");
    expect(r.output.summary!.length).toBeLessThanOrEqual(65_535);
    expect(r.output.summary).toContain("the full report is at https://steward.example/status");
    expect(r.details_url).toBe("https://steward.example/status");
  });

  it("reuses its run on check_suite requests and check_run re-runs instead of piling up runs", async () => {
    stage([{ path: FILE, status: "modified", head: "rerun:\n  max_atempts: 1\n", base: "" }]);
    await run(pullEvent("opened"));
    const suite = example("check_suite", "rerequested");
    suite.repository = { ...suite.repository, id: 500, name: "web", full_name: "acme/web", owner: { login: "acme" } };
    suite.check_suite.head_sha = HEAD;
    suite.check_suite.pull_requests = [{ number: 7, head: { sha: HEAD, ref: "x", repo: { id: 500 } }, base: { sha: BASE, ref: "main", repo: { id: 500 } } }];
    await run({ name: "check_suite", payload: suite });
    const rerun = example("check_run", "rerequested");
    rerun.repository = suite.repository;
    rerun.check_run = { ...rerun.check_run, name: "steward/config", head_sha: HEAD, app: { id: 42 }, pull_requests: suite.check_suite.pull_requests };
    await run({ name: "check_run", payload: rerun });
    expect(gh.runs).toHaveLength(1);
    expect(gh.runs[0]!.annotations).toHaveLength(1);
    expect(gh.writes().filter((w) => w.method === "POST")).toHaveLength(1);
  });

  it("answers a re-run of a fork's check, whose payload names no pull request, from its record", async () => {
    const store = memoryStore();
    stage([{ path: FILE, status: "modified", head: "rerun:\n  max_atempts: 1\n", base: "" }]);
    await run(pullEvent("opened", { fork: true }), { store });
    const rerun = example("check_run", "rerequested");
    rerun.repository = { ...rerun.repository, id: 500, name: "web", full_name: "acme/web", owner: { login: "acme" } };
    rerun.check_run = { ...rerun.check_run, name: "steward/config", head_sha: HEAD, app: { id: 42 }, pull_requests: [] };
    expect(await run({ name: "check_run", payload: rerun }, { store })).toMatchObject({ status: "done" });
    expect(gh.requests.filter((r) => r.path.endsWith("/pulls/7/files"))).toHaveLength(2);
    expect(await run({ name: "check_run", payload: rerun }, { store: memoryStore() })).toMatchObject({ status: "skipped" });
  });

  it("ignores re-runs of other checks and of other apps' runs", async () => {
    const rerun = example("check_run", "rerequested");
    rerun.check_run = { ...rerun.check_run, name: "ci/build" };
    expect(await run({ name: "check_run", payload: rerun })).toMatchObject({ status: "skipped" });
    rerun.check_run = { ...rerun.check_run, name: "steward/config", app: { id: 7 } };
    expect(await run({ name: "check_run", payload: rerun })).toEqual({ status: "skipped", reason: "check run belongs to another app" });
    expect(await run(pullEvent("closed"))).toMatchObject({ status: "skipped" });
    expect(gh.requests).toEqual([]);
  });

  it("treats a policy file renamed away as removed", async () => {
    stage([{ path: ".github/steward.yaml", status: "renamed", previous_filename: FILE, base: "checks: {config: true}\n" }]);
    gh.setFile("acme", "web", FILE, "checks: {config: true}\n", BASE);
    await run(pullEvent("opened"));
    expect(gh.runs[0]!.output.summary).toContain(`\`${FILE}\` (removed)`);
  });
});
