import { examples } from "../../support/webhook-examples.js";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createChecksHandler } from "../../../handlers/checks/index.js";
import { defineHandler } from "../../../src/handler.js";
import secrets from "../../../handlers/secrets/index.js";
import type { ChecksPolicy } from "../../../handlers/checks/policy.js";
import type { StewardConfig } from "../../../src/config/types.js";
import type { Store } from "../../../src/store/types.js";
import { rerunLike, secretsLike } from "../../policy/fixtures.js";
import { handlerContext, memoryStore } from "./context.js";
import { startHubClient, type HubClient } from "../../support/hub-client.js";

// The handler called directly against the sandbox hub: pull requests opened there (their files
// and contents at each commit are the hub's), check runs read back from the hub's checks domain.
const FILE = ".github/steward.yml";
// A section of plain text (no patterns), so a policy file within its bounds can still make a long report.
const notesLike = defineHandler<{ notes: string[] }>({
  name: "notes",
  events: [],
  policy: {
    key: "notes",
    schema: {
      type: "object",
      additionalProperties: false,
      properties: { notes: { type: "array", items: { type: "string" } } },
    },
    defaults: { notes: [] },
  },
  handle: async () => ({ status: "skipped", reason: "fixture" }),
});
const handler = createChecksHandler({ handlers: async () => [rerunLike, secretsLike, notesLike, handler] });

type Example = { name: string; examples: Record<string, any>[] };
const example = (name: string, action: string): Record<string, any> =>
  structuredClone(
    (examples as unknown as Example[]).find((e) => e.name === name)!.examples.find((x) => x.action === action)!,
  );

let gh: HubClient;
beforeEach(async () => {
  gh = await startHubClient();
});
afterEach(() => gh.close());

const run = (
  event: { name: string; payload: Record<string, any> },
  opts: { policy?: ChecksPolicy; store?: Store; config?: Partial<StewardConfig> } = {},
) => handler.handle(handlerContext<ChecksPolicy>(gh, handler, event, opts));

interface Staged {
  number: number;
  head: string;
  base: string;
  repo: string;
  /** The hub's pull_request delivery for the current head (opened, then synchronize), or of `action`. */
  event(action?: string): Promise<{ name: string; payload: Record<string, any> }>;
}

/**
 * Files on the base branch (`base`), then a pull request changing them to `head` (`null` removes
 * a file). Every test opens its own pull request on a fresh hub.
 */
async function stage(
  files: { path: string; head?: string | null; base?: string }[],
  opts: { repo?: string; branch?: string; fork?: boolean } = {},
): Promise<Staged> {
  const repo = opts.repo ?? "web";
  const baseFiles = Object.fromEntries(files.filter((f) => f.base !== undefined).map((f) => [f.path, f.base!]));
  if (Object.keys(baseFiles).length)
    gh.hub.control.pushFiles({ owner: "acme", repo, files: baseFiles, message: "base" });
  const pr = gh.hub.control.openPullRequest({
    owner: "acme",
    repo,
    head: opts.branch ?? "change-policy",
    fromFork: opts.fork ?? false,
    files: Object.fromEntries(files.filter((f) => f.head !== undefined).map((f) => [f.path, f.head!])),
  });
  const staged: Staged = {
    number: pr.number,
    head: pr.head_sha,
    base: "",
    repo,
    async event(action) {
      const of = (d: { event: string; action: string | null; payload: unknown }) => {
        const p = d.payload as { number: number; pull_request: { head: { sha: string } } };
        return (
          d.event === "pull_request" &&
          p.number === pr.number &&
          p.pull_request.head.sha === staged.head &&
          (action === undefined || d.action === action)
        );
      };
      const [delivery] = (await gh.hub.control.waitForDeliveries(of)).filter(of).slice(-1);
      return { name: "pull_request", payload: structuredClone(delivery!.payload) as Record<string, any> };
    },
  };
  staged.base = (await staged.event()).payload.pull_request.base.sha;
  return staged;
}

/** Push to a staged pull request: its head moves and the hub sends `synchronize`. */
function pushTo(pr: Staged, files: Record<string, string | null>): void {
  pr.head = gh.hub.control.pushToPullRequest({ owner: "acme", repo: pr.repo, number: pr.number, files }).sha;
}

type Run = {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  details_url: string;
  output: { title: string | null; summary: string | null; text: string | null };
  annotations: {
    path: string;
    start_line: number;
    start_column: number | null;
    annotation_level: string;
    message: string;
  }[];
};
const runs = (repo = "web") => gh.hub.domains.checks.checkRuns({ owner: "acme", repo }) as unknown as Run[];
const annotationsAt = (repo = "web") =>
  runs(repo)
    .at(-1)!
    .annotations.map((a) => `${a.path}:${a.start_line}:${a.start_column} ${a.message}`);
const writes = () => gh.sent.filter((r) => r.method !== "GET");

/** A check_suite or check_run payload (from the examples) for a staged pull request. */
function checkEvent(
  name: "check_suite" | "check_run",
  pr: Staged,
  over: { pullRequests?: boolean; checkName?: string; appId?: number } = {},
) {
  const payload = example(name, "rerequested");
  const repo = gh.hub.control.repo("acme", pr.repo)!;
  payload.repository = {
    ...payload.repository,
    id: repo.id,
    name: pr.repo,
    full_name: `acme/${pr.repo}`,
    owner: { ...payload.repository.owner, login: "acme" },
  };
  const pulls =
    over.pullRequests === false
      ? []
      : [
          {
            number: pr.number,
            head: { sha: pr.head, ref: "change-policy", repo: { id: repo.id } },
            base: { sha: pr.base, ref: "main", repo: { id: repo.id } },
          },
        ];
  if (name === "check_suite") Object.assign(payload.check_suite, { head_sha: pr.head, pull_requests: pulls });
  else
    payload.check_run = {
      ...payload.check_run,
      name: over.checkName ?? "steward/config",
      head_sha: pr.head,
      app: { id: over.appId ?? gh.appId },
      pull_requests: pulls,
    };
  return { name, payload };
}

describe("checks handler: steward/config", () => {
  it("fails a typo'd key and a bad glob with two annotations on the right lines, then goes green once fixed", async () => {
    const broken = "rerun:\n  max_atempts: 3\n  branches:\n    - main\n    - 'release/[0-9'\n";
    const pr = await stage([{ path: FILE, head: broken, base: "rerun:\n  max_attempts: 2\n" }]);
    const outcome = await run(await pr.event());
    expect(outcome).toMatchObject({ status: "done" });
    expect(runs()).toHaveLength(1);
    expect(runs()[0]).toMatchObject({
      name: "steward/config",
      head_sha: pr.head,
      status: "completed",
      conclusion: "failure",
    });
    expect(annotationsAt()).toEqual([
      `${FILE}:2:3 unknown key "max_atempts" in "rerun" (did you mean "max_attempts"?)`,
      `${FILE}:5:7 unclosed "[" in glob "release/[0-9"`,
    ]);
    expect(runs()[0]!.annotations.map((a) => a.annotation_level)).toEqual(["failure", "failure"]);

    const fixed = "rerun:\n  max_attempts: 3\n  branches:\n    - main\n    - 'release/*'\n";
    pushTo(pr, { [FILE]: fixed });
    const sync = await pr.event();
    expect(sync.payload.action).toBe("synchronize");
    await run(sync);
    const green = runs().at(-1)!;
    expect(green).toMatchObject({ head_sha: pr.head, conclusion: "success", annotations: [] });
    expect(green.output.summary).toContain("`rerun.max_attempts`: `2` → `3`");
    expect(green.output.summary).toContain('`rerun.branches`: `["main"]` → `["main","release/*"]`');
    expect(green.output.summary).toMatch(/```yaml\nrerun:\n {2}enabled: true\n {2}max_attempts: 3/);
  });

  it("reports every problem of a file as an annotation and in a summary table", async () => {
    const pr = await stage([
      { path: FILE, head: "rerun:\n  enabld: true\n  branches: ['{a']\nchecks:\n  config: maybe\n" },
    ]);
    await run(await pr.event());
    const r = runs()[0]!;
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
    const pr = await stage([
      { path: "src/index.ts", head: "export {};\n", base: "" },
      { path: ".github/workflows/ci.yml", head: "on: push\n", base: "on: pull_request\n" },
      { path: ".github/steward/secrets.yml", head: "secrets: {}\n" },
    ]);
    const outcome = await run(await pr.event());
    expect(outcome).toMatchObject({ status: "done", summary: `#${pr.number}: no policy file changed` });
    expect(writes()).toEqual([]);
    expect(gh.sent.map((r) => r.path)).toEqual([`/repos/acme/web/pulls/${pr.number}/files`]);
    expect(runs()).toEqual([]);
  });

  it("finds a policy file among many pages of changed files", async () => {
    const many = Array.from({ length: 250 }, (_, i) => ({
      path: `src/f${i}.ts`,
      head: `export const f${i} = ${i};\n`,
    }));
    const pr = await stage([...many, { path: FILE, head: "checks: {config: true}\n", base: "" }]);
    await run(await pr.event());
    expect(runs()[0]).toMatchObject({ conclusion: "success" });
    expect(gh.sent.filter((r) => r.path.endsWith(`/pulls/${pr.number}/files`))).toHaveLength(3);
  });

  it("reads a fork's files from the base repository at the head commit, and says so", async () => {
    const pr = await stage([{ path: FILE, head: "checks:\n  config: false\n", base: "" }], { fork: true });
    const event = await pr.event();
    expect(event.payload.pull_request.head.repo.full_name).toBe("contributor/web");
    await run(event);
    expect(runs()[0]).toMatchObject({ conclusion: "success", head_sha: pr.head });
    expect(runs()[0]!.output.summary).toContain("comes from a fork");
    const reads = gh.sent.filter((r) => r.path.includes("/contents/"));
    expect(reads.every((r) => r.path.startsWith("/repos/acme/"))).toBe(true);
    expect(reads.some((r) => r.path === `/repos/acme/web/contents/${FILE}` && r.query.get("ref") === pr.head)).toBe(
      true,
    );
  });

  it("uses the base branch's own policy to decide, never the pull request's: checks.config false skips", async () => {
    const pr = await stage([{ path: FILE, head: "rerun: {enabled: 1}\n", base: "" }]);
    const outcome = await run(await pr.event(), { policy: { config: false } });
    expect(outcome).toEqual({ status: "skipped", reason: "checks.config is false" });
    expect(gh.sent).toEqual([]);
  });

  it("reports a deleted policy file as a fall-back to the org file and defaults", async () => {
    gh.hub.control.pushFiles({ owner: "acme", repo: ".github", files: { [FILE]: "rerun:\n  max_attempts: 5\n" } });
    // acme/api is private like acme/.github, so its check may show the org file (see sandbox.test.ts for public ones).
    const pr = await stage([{ path: FILE, head: null, base: "rerun:\n  max_attempts: 3\n" }], { repo: "api" });
    await run(await pr.event());
    const r = runs("api")[0]!;
    expect(r).toMatchObject({ conclusion: "success", annotations: [] });
    expect(r.output.summary).toContain(
      "Removed: the repository falls back to the organisation's file in `acme/.github` and the defaults.",
    );
    expect(r.output.summary).toContain("`rerun.max_attempts`: `3` → `5`");
  });

  it("annotates a file that is not valid YAML at the syntax error", async () => {
    const pr = await stage([{ path: FILE, head: "rerun:\n  branches: [main\nchecks: {}\n", base: "" }]);
    await run(await pr.event());
    const r = runs()[0]!;
    expect(r.conclusion).toBe("failure");
    expect(r.annotations.length).toBeGreaterThan(0);
    expect(r.annotations.every((a) => String(a.message).startsWith("YAML syntax error") && a.start_line >= 2)).toBe(
      true,
    );
  });

  it("merges over the org file as the loader does, and shows problems of the org file without failing", async () => {
    gh.hub.control.pushFiles({
      owner: "acme",
      repo: ".github",
      files: { [FILE]: "rerun:\n  max_attempts: 4\nchecks:\n  confg: true\n" },
    });
    const pr = await stage([{ path: FILE, head: "rerun:\n  branches: [trunk]\n", base: "" }], { repo: "api" });
    await run(await pr.event());
    const r = runs("api")[0]!;
    expect(r.conclusion).toBe("success");
    expect(r.annotations).toEqual([]);
    expect(r.output.summary).toContain("merged over `acme/.github`");
    expect(r.output.summary).toMatch(/max_attempts: 4\n {2}branches:\n {4}- trunk/);
    expect(r.output.summary).toContain('`acme/.github:.github/steward.yml:4:3`: unknown key "confg"');
  });

  it("validates an org-level file and admin documents changed in the admin repository", async () => {
    const pr = await stage(
      [
        { path: FILE, head: "rerun:\n  max_attempts: 4\n", base: "rerun:\n  max_attempts: 2\n" },
        { path: ".github/steward/secrets.yml", head: "secrets:\n  - name: npm_token\n    repositories: ['*']\n" },
        { path: ".github/steward/secret.yml", head: "a: 1\n" },
      ],
      { repo: ".github" },
    );
    await run(await pr.event());
    const r = runs(".github")[0]!;
    expect(r.conclusion).toBe("failure");
    expect(annotationsAt(".github")).toEqual([
      '.github/steward/secret.yml:1:1 ".github/steward/secret.yml" is not a Steward policy document (did you mean ".github/steward/secrets.yml"?)',
      '.github/steward/secrets.yml:2:11 "secrets.0.name" must match pattern "^[A-Z_][A-Z0-9_]*$"',
    ]);
    expect(r.output.summary).toContain("`rerun.max_attempts`: `2` → `4`");
    // The admin repository's own file is the org file: nothing is read from elsewhere.
    expect(
      gh.sent.filter((q) => q.path.includes("/contents/")).every((q) => q.path.startsWith("/repos/acme/.github/")),
    ).toBe(true);
  });

  it("validates a fork's secrets.yml for structure only: its run is the same whatever the host holds", async () => {
    const withSecrets = createChecksHandler({ handlers: async () => [secrets, withSecrets] });
    const VAR = "STEWARD_CHECKS_FORK_PROBE";
    const dir = await mkdtemp(join(tmpdir(), "steward-checks-fork-"));
    const file = join(dir, "deploy_key");
    const DOC = ".github/steward/secrets.yml";
    const text = `secrets:\n  TOKEN:\n    from: env:${VAR}\n    repositories: [web]\n  KEY:\n    from: file:${file}\n    repositories: ["[x"]\n`;
    const runFor = async (branch: string, fork: boolean) => {
      const pr = await stage([{ path: DOC, head: text }], { repo: ".github", branch, fork });
      await withSecrets.handle(handlerContext<ChecksPolicy>(gh, withSecrets, await pr.event()));
      const r = runs(".github").find((x) => x.head_sha === pr.head)!;
      const annotations = r.annotations.map(({ path, start_line, start_column, annotation_level, message }) => ({
        path,
        start_line,
        start_column,
        annotation_level,
        message,
      }));
      return {
        conclusion: r.conclusion,
        title: r.output.title,
        summary: r.output.summary,
        text: r.output.text,
        annotations,
      };
    };
    try {
      delete process.env[VAR];
      const absent = await runFor("probe-absent", true);
      process.env[VAR] = "probe-value-present";
      await writeFile(file, "probe-file-content\n");
      const present = await runFor("probe-present", true);
      expect(JSON.stringify(present)).toBe(JSON.stringify(absent));
      expect(absent.conclusion).toBe("failure");
      expect(absent.annotations.map((a) => a.message)).toEqual(['unclosed "[" in glob "[x"']);
      expect(absent.summary).toContain("validated for structure only");

      // A pull request from the repository itself is validated the same way: validation never
      // looks at the host (only a plan resolves, and says "not available" for whatever it cannot read).
      delete process.env[VAR];
      await rm(file);
      const sameRepo = await runFor("probe-same-repo", false);
      expect(sameRepo.annotations.map((a) => a.message)).toEqual(['unclosed "[" in glob "[x"']);
    } finally {
      delete process.env[VAR];
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("sends 51 problems as 50 with the create and 1 with an update", async () => {
    const keys = Array.from({ length: 51 }, (_, i) => `  unknown_${i}: 1`).join("\n");
    const pr = await stage([{ path: FILE, head: `rerun:\n${keys}\n`, base: "" }]);
    await run(await pr.event());
    expect(writes().map((w) => `${w.method} ${w.status} ${w.body.output.annotations.length}`)).toEqual([
      "POST 201 50",
      "PATCH 200 1",
    ]);
    expect(runs()[0]!.annotations).toHaveLength(51);
  });

  it("cuts a summary over the size limit with a note instead of failing the request", async () => {
    // Within the policy file's own 64 KiB and pattern bounds: a flow list of plain text, shown
    // once as a change and once, a line an entry, in the effective policy.
    const notes = Array.from({ length: 2_200 }, (_, i) => `release/branch-${String(i).padStart(9, "0")}`).join(", ");
    const pr = await stage([{ path: FILE, head: `notes:\n  notes: [${notes}]\n`, base: "" }]);
    await run(await pr.event(), { config: { statusUrl: "https://steward.example/status" } });
    const r = runs()[0]!;
    expect(r.conclusion).toBe("success");
    expect(r.output.summary!.length).toBeLessThanOrEqual(65_535);
    expect(r.output.summary).toContain("the full report is at https://steward.example/status");
    expect(r.details_url).toBe("https://steward.example/status");
  });

  it("reuses its run on check_suite requests and check_run re-runs instead of piling up runs", async () => {
    const pr = await stage([{ path: FILE, head: "rerun:\n  max_atempts: 1\n", base: "" }]);
    await run(await pr.event());
    await run(checkEvent("check_suite", pr));
    await run(checkEvent("check_run", pr));
    expect(runs()).toHaveLength(1);
    expect(runs()[0]!.annotations).toHaveLength(1);
    expect(writes().filter((w) => w.method === "POST")).toHaveLength(1);
    // The three name the same two commits: the pull request's files were listed once.
    expect(gh.sent.filter((r) => r.path.endsWith(`/pulls/${pr.number}/files`))).toHaveLength(1);
  });

  it("answers a re-run of a fork's check, whose payload names no pull request, from its record", async () => {
    const store = memoryStore();
    const pr = await stage([{ path: FILE, head: "rerun:\n  max_atempts: 1\n", base: "" }], { fork: true });
    await run(await pr.event(), { store });
    const rerun = checkEvent("check_run", pr, { pullRequests: false });
    expect(await run(rerun, { store })).toMatchObject({ status: "done" });
    // Its files were listed once: the re-run names the same two commits (handlers/shared/pull-files.ts).
    expect(gh.sent.filter((r) => r.path.endsWith(`/pulls/${pr.number}/files`))).toHaveLength(1);
    expect(await run(rerun, { store: memoryStore() })).toMatchObject({ status: "skipped" });
  });

  it("ignores re-runs of other checks and of other apps' runs", async () => {
    const pr = await stage([{ path: FILE, head: "rerun:\n  max_atempts: 1\n", base: "" }]);
    expect(await run(checkEvent("check_run", pr, { checkName: "ci/build" }))).toMatchObject({ status: "skipped" });
    expect(await run(checkEvent("check_run", pr, { appId: gh.appId + 1 }))).toEqual({
      status: "skipped",
      reason: "check run belongs to another app",
    });
    gh.hub.control.closePullRequest({ owner: "acme", repo: "web", number: pr.number });
    const closed = await pr.event("closed");
    expect(await run(closed)).toMatchObject({ status: "skipped" });
    expect(gh.sent).toEqual([]);
  });

  it("treats a policy file renamed away as removed", async () => {
    const pr = await stage([
      { path: FILE, head: null, base: "checks: {config: true}\n" },
      { path: ".github/steward.yaml", head: "checks: {config: true}\n" },
    ]);
    const { data: files } = await gh.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      owner: "acme",
      repo: "web",
      pull_number: pr.number,
    });
    expect(files.map((f) => [f.filename, f.status, f.previous_filename])).toEqual([
      [".github/steward.yaml", "renamed", FILE],
    ]);
    await run(await pr.event());
    expect(runs()[0]!.output.summary).toContain(`\`${FILE}\` (removed)`);
  });
});
