// The handler carrying out decisions against the sandbox hub, called directly: both answering
// paths (protection-rule callbacks with the installation token, reviews with a required
// reviewer's token), waits that survive a new handler instance, re-evaluation on completed checks
// and deployment statuses, refusals, redelivery. The hub sends the payloads and enforces who may
// answer what; the handler's clock is set apart from the hub's (windows, the 30-day limit).
import { examples } from "../../support/webhook-examples.js";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ScheduleRequest } from "../../../src/handler.js";
import type { JobSpec } from "@steward/sandbox-hub";
import { createDeploymentsHandler } from "../../../handlers/deployments/index.js";
import { reviewerOctokitFrom } from "../../../handlers/deployments/answer.js";
import type { DeploymentsPolicy } from "../../../handlers/deployments/policy.js";
import { startHubClient, type HubClient } from "../../support/hub-client.js";
import { makeHarness, type Harness } from "./harness.js";

const ORG = "acme";
const REPO = "web";
const REVIEWER = "release-manager";
const MONDAY = new Date("2026-11-23T09:00:00Z"); // 10:00 in Paris
const SATURDAY = new Date("2026-11-21T15:00:00Z");
const RULE = "POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule";
const REVIEW = "POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments";

type Example = { name: string; examples: Record<string, any>[] };
const all = examples as unknown as Example[];
const example = (name: string, action: string) =>
  structuredClone(all.find((e) => e.name === name)!.examples.find((e) => e.action === action)!);

const policy: DeploymentsPolicy = {
  environments: {
    production: {
      branches: ["main", "v*"],
      checks: ["build", "test"],
      windows: [{ days: ["mon", "tue", "wed", "thu", "fri"], hours: "09:00-17:00", timezone: "Europe/Paris" }],
    },
    staging: { after: ["qa"] },
    "preview-*": { approve: "always" },
  },
};

let gh: HubClient;
let h: Harness;
let clock: Date;

function handler(reviewer: () => ReturnType<HubClient["userOctokit"]> | undefined = () => gh.userOctokit(REVIEWER)) {
  return createDeploymentsHandler({ now: () => clock, reviewerOctokit: reviewer });
}

const repo = () => gh.hub.control.repo(ORG, REPO)!;
const deployments = () => gh.hub.domains.deployments;
const actions = () => gh.hub.domains.actions;
/** Answers the hub took (callbacks and reviews), with their bodies. */
const answers = () => gh.sent.filter((r) => r.method === "POST" && r.status < 300);
const short = (sha: string) => sha.slice(0, 7);

beforeEach(async () => {
  clock = MONDAY;
  gh = await startHubClient();
  h = makeHarness(gh);
});

afterEach(async () => {
  await gh.close();
});

/** An environment guarded by Steward's protection rule and/or required reviewers. */
function environment(name: string, o: { rule?: boolean; reviewers?: string[] } = {}): number {
  return deployments().putEnvironment(repo(), name, {
    ...(o.rule ? { protectionApps: [gh.appId] } : {}),
    ...(o.reviewers ? { reviewers: o.reviewers } : {}),
  }).id;
}

interface Deploy {
  runId: number;
  sha: string;
  /** The hub's delivery of `event` (and `action`) for this run, e.g. deployment_protection_rule. */
  delivery(event: string, o?: { action?: string; environment?: string }): Promise<Record<string, any>>;
}

/** A workflow run; `ready` jobs finish green first (their check runs are what `checks` reads). */
async function deploy(
  jobs: JobSpec[],
  o: { ready?: string[]; branch?: string; sha?: string; event?: string; headRepository?: string } = {},
): Promise<Deploy> {
  const { ready = [], ...start } = o;
  const run = actions().startRun({ owner: ORG, repo: REPO, workflow: "Deploy", jobs, ...start });
  for (const job of ready) actions().completeJob({ runId: run.id, job });
  await actions().idle();
  return {
    runId: run.id,
    sha: run.head_sha,
    async delivery(event, f = {}) {
      const of = (d: { event: string; action: string | null; payload: unknown }) => {
        const p = d.payload as {
          environment?: string;
          workflow_run?: { id: number };
          workflow_job?: { run_id: number };
          deployment_callback_url?: string;
        };
        const runId =
          p.workflow_run?.id ??
          p.workflow_job?.run_id ??
          Number(/\/runs\/(\d+)\//.exec(p.deployment_callback_url ?? "")?.[1]);
        return (
          d.event === event &&
          (f.action === undefined || d.action === f.action) &&
          runId === run.id &&
          (f.environment === undefined || p.environment === f.environment)
        );
      };
      const [d] = await gh.hub.control.waitForDeliveries(of);
      return structuredClone(d!.payload) as Record<string, any>;
    },
  };
}

const GREEN_PRODUCTION: JobSpec[] = [
  { name: "build" },
  { name: "test" },
  { name: "deploy", needs: ["build", "test"], environment: "production" },
];
const ruleStates = (runId: number) =>
  deployments()
    .gatesOf(runId)
    .flatMap((g) => g.rules.map((r) => `${g.environment}:${r.state}`));

describe("deployments handler: protection rule", () => {
  it("approves main with green checks inside the window, once under redelivery", async () => {
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    const payload = await d.delivery("deployment_protection_rule");
    const handling = handler();
    const first = await handling.handle(h.context("deployment_protection_rule", payload, policy));
    expect(first).toMatchObject({ status: "done" });
    const again = await handling.handle(h.context("deployment_protection_rule", payload, policy));
    expect(again).toMatchObject({ status: "skipped", reason: expect.stringContaining("already answered") });

    expect(answers()).toHaveLength(1);
    const post = answers()[0]!;
    expect(post.path).toBe(`/repos/${ORG}/${REPO}/actions/runs/${d.runId}/deployment_protection_rule`);
    expect(post.as).toBe("installation");
    expect(post.body).toEqual({
      environment_name: "production",
      state: "approved",
      comment: [
        "Steward approved the deployment to production:",
        "- `main` may deploy to production",
        `- checks \`build\`, \`test\` succeeded on ${short(d.sha)}`,
        "- inside deploy window Mon-Fri 09:00-17:00 Europe/Paris",
      ].join("\n"),
    });
    expect(ruleStates(d.runId)).toEqual(["production:approved"]);
    const checkRead = gh.sent.find((r) => r.path.endsWith("/check-runs"))!;
    expect(checkRead.query.get("filter")).toBe("latest");
    expect((await h.store.auditLog({ kind: "deployment_answer" }))[0]!.details).toMatchObject({
      environment: "production",
      state: "approved",
      runId: d.runId,
    });
  });

  it("rejects a feature branch with the reason", async () => {
    environment("production", { rule: true });
    const d = await deploy([{ name: "deploy", environment: "production" }], { branch: "feature/x" });
    const out = await handler().handle(
      h.context("deployment_protection_rule", await d.delivery("deployment_protection_rule"), policy),
    );
    expect(out).toMatchObject({ status: "done" });
    expect(answers()[0]!.body).toMatchObject({
      state: "rejected",
      comment: expect.stringContaining("`feature/x` may not deploy to production (allowed: `main`, `v*`)"),
    });
    expect(ruleStates(d.runId)).toEqual(["production:rejected"]);
  });

  it("reads ref and sha from the run when an older payload lacks them", async () => {
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    const payload = await d.delivery("deployment_protection_rule");
    delete payload.ref;
    delete payload.sha;
    delete payload.deployment;
    await handler().handle(h.context("deployment_protection_rule", payload, policy));
    expect(gh.sent.some((r) => r.method === "GET" && r.path.endsWith(`/actions/runs/${d.runId}`))).toBe(true);
    expect(answers()[0]!.body).toMatchObject({ state: "approved" });
  });

  describe("a fork pull request's run", () => {
    const FORK_REASON = "the code comes from fork contributor/web: Steward never approves deploying a fork's code";
    const forkDeploy = (jobs: JobSpec[]) => {
      gh.hub.control.openPullRequest({
        owner: ORG,
        repo: REPO,
        head: "main",
        fromFork: true,
        files: { "f.txt": "f\n" },
      });
      return deploy(jobs, { headRepository: "contributor/web", branch: "main" });
    };

    it("is rejected though its branch is named main, after reading the run and nothing else", async () => {
      environment("production", { rule: true });
      const d = await forkDeploy([{ name: "deploy", environment: "production" }]);
      const payload = await d.delivery("deployment_protection_rule");
      expect(payload.event).toBe("pull_request");
      const out = await handler().handle(h.context("deployment_protection_rule", payload, policy));
      expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("rejected production") });
      expect(answers().map((a) => a.body)).toEqual([
        {
          environment_name: "production",
          state: "rejected",
          comment: `Steward rejected the deployment to production:\n- ${FORK_REASON}`,
        },
      ]);
      expect(gh.sent.filter((r) => r.method === "GET").map((r) => r.path)).toEqual([
        `/repos/${ORG}/${REPO}/actions/runs/${d.runId}`,
      ]);
    });

    it("is rejected where the policy approves always", async () => {
      environment("preview-7", { rule: true });
      const d = await forkDeploy([{ name: "deploy", environment: "preview-7" }]);
      await handler().handle(
        h.context("deployment_protection_rule", await d.delivery("deployment_protection_rule"), policy),
      );
      expect(answers().map((a) => a.body)).toEqual([
        {
          environment_name: "preview-7",
          state: "rejected",
          comment: `Steward rejected the deployment to preview-7:\n- ${FORK_REASON}`,
        },
      ]);
    });

    it("of the repository's own branch is judged by the policy as before", async () => {
      environment("production", { rule: true });
      const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"], event: "pull_request" });
      const payload = await d.delivery("deployment_protection_rule");
      expect(payload.event).toBe("pull_request");
      await handler().handle(h.context("deployment_protection_rule", payload, policy));
      expect(answers()[0]!.body).toMatchObject({ state: "approved" });
    });

    it("is rejected by the required reviewer too, the run read because a job does not say whose code it runs", async () => {
      const envId = environment("preview-7", { reviewers: [REVIEWER] });
      const d = await forkDeploy([{ name: "deploy", environment: "preview-7" }]);
      const job = await d.delivery("workflow_job", { action: "waiting" });
      const out = await handler().handle(h.context("workflow_job", job, policy));
      expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("rejected preview-7") });
      const posts = gh.sent.filter((r) => r.method === "POST");
      expect(posts.map((p) => [p.as, p.status, p.body])).toEqual([
        [
          REVIEWER,
          200,
          {
            environment_ids: [envId],
            state: "rejected",
            comment: `Steward rejected the deployment to preview-7:\n- ${FORK_REASON}`,
          },
        ],
      ]);
    });
  });

  it("leaves environments without a policy entry alone", async () => {
    environment("qa", { rule: true });
    const d = await deploy([{ name: "deploy", environment: "qa" }]);
    const out = await handler().handle(
      h.context("deployment_protection_rule", await d.delivery("deployment_protection_rule"), policy),
    );
    expect(out).toMatchObject({ status: "skipped", reason: "no deployments policy matches environment qa" });
    expect(gh.sent.filter((r) => r.method === "POST")).toEqual([]);
    expect(ruleStates(d.runId)).toEqual(["qa:pending"]);
  });

  it("waits on a running check with one comment-only status, then approves when the check completes", async () => {
    environment("production", { rule: true });
    const d = await deploy(
      [{ name: "build" }, { name: "test" }, { name: "deploy", needs: ["build"], environment: "production" }],
      { ready: ["build"] },
    );
    const payload = await d.delivery("deployment_protection_rule");
    // Steward gives up a day before GitHub's 30 days run out.
    const deadline = new Date(Date.parse(payload.deployment.created_at) + 29 * 86_400_000)
      .toISOString()
      .slice(0, 16)
      .replace("T", " ");
    const handling = handler();
    expect(await handling.handle(h.context("deployment_protection_rule", payload, policy))).toMatchObject({
      status: "done",
      summary: expect.stringContaining("waiting"),
    });
    // A redelivery while waiting does not announce the same wait again.
    await handling.handle(h.context("deployment_protection_rule", payload, policy));
    expect(answers()).toHaveLength(1);
    expect(answers()[0]!.body).toEqual({
      environment_name: "production",
      comment: `Steward is holding the deployment to production (it is rejected at ${deadline} UTC if still waiting):\n- check \`test\` is still running on ${short(d.sha)}`,
    });
    expect(deployments().gatesOf(d.runId)[0]!.rules[0]).toMatchObject({
      state: "pending",
      comments: [answers()[0]!.body.comment],
    });
    expect(h.scheduled.at(-1)).toMatchObject({
      key: `rule:${ORG}/${REPO}:${d.runId}:production`,
      installationId: gh.installationId,
      replace: true,
    });

    // A check on another sha settles nothing.
    actions().completeJob({ runId: d.runId, job: "test" });
    const [testDone] = await gh.hub.control.waitForDeliveries(
      (x) => x.event === "check_run" && x.action === "completed" && (x.payload as any).check_run.name === "test",
    );
    const completed = structuredClone(testDone!.payload) as Record<string, any>;
    const otherSha = structuredClone(completed);
    otherSha.check_run.head_sha = "f".repeat(40);
    expect(await handling.handle(h.context("check_run", otherSha, policy))).toMatchObject({ status: "skipped" });

    expect(completed.check_run.head_sha).toBe(d.sha);
    expect(await handling.handle(h.context("check_run", completed, policy))).toMatchObject({
      status: "done",
      summary: expect.stringContaining("approved production"),
    });
    expect(answers().at(-1)!.body).toMatchObject({ state: "approved" });
    expect(ruleStates(d.runId)).toEqual(["production:approved"]);
    expect(await h.store.list("deployments:wait:")).toEqual([]);
    expect(h.cancelled).toContain(`rule:${ORG}/${REPO}:${d.runId}:production`);
  });

  it("waits outside the window and approves from the scheduled task, in a new handler instance", async () => {
    clock = SATURDAY;
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    await handler().handle(
      h.context("deployment_protection_rule", await d.delivery("deployment_protection_rule"), policy),
    );
    expect(answers()[0]!.body!.comment).toContain(
      "outside deploy window Mon-Fri 09:00-17:00 Europe/Paris; next window opens 2026-11-23 09:00 CET",
    );
    const task = h.scheduled.at(-1)!;
    // Scheduled by delay on the service clock: Saturday 15:00 UTC to Monday 08:00 UTC is 41 hours.
    const delay = task.runAt.getTime() - Date.now();
    expect(delay).toBeGreaterThan(41 * 3_600_000 - 60_000);
    expect(delay).toBeLessThanOrEqual(41 * 3_600_000);

    clock = new Date("2026-11-23T08:00:00Z");
    const restarted = handler();
    // At start, every wait is re-evaluated at once (the clock may have moved on while down).
    const atStart: ScheduleRequest[] = [];
    const service = {
      store: h.store,
      log: pino({ level: "silent" }),
      config: {} as never,
      now: () => clock,
      signal: new AbortController().signal,
      octokitFor: async () => {
        throw new Error("unused");
      },
      appOctokit: async () => {
        throw new Error("unused");
      },
    };
    await restarted.start!({
      ...service,
      scheduler: { schedule: async (r) => void atStart.push(r), cancel: async () => {} },
    });
    expect(atStart).toHaveLength(1);
    expect(atStart[0]).toMatchObject({
      key: task.key,
      data: task.data,
      installationId: gh.installationId,
      replace: true,
    });
    expect(atStart[0]!.runAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await restarted.onTask!(h.task(task, policy))).toMatchObject({ status: "done" });
    expect(answers().at(-1)!.body).toMatchObject({ state: "approved" });
    // The task firing again (e.g. a retry) finds nothing left to do.
    expect(await restarted.onTask!(h.task(task, policy))).toMatchObject({ status: "skipped" });
    expect(answers().filter((a) => a.body?.state)).toHaveLength(1);
    expect(ruleStates(d.runId)).toEqual(["production:approved"]);
  });

  it("checks `after` through deployments and their latest statuses", async () => {
    environment("staging", { rule: true });
    const d = await deploy([{ name: "deploy", environment: "staging" }]);
    const failed = deployments().createDeployment(repo(), { sha: d.sha, ref: "main", environment: "qa" });
    deployments().addStatus(repo(), failed, "failure");
    const latest = deployments().createDeployment(repo(), { sha: d.sha, ref: "main", environment: "qa" });
    deployments().addStatus(repo(), latest, "in_progress");
    deployments().addStatus(repo(), latest, "success");
    await handler().handle(
      h.context("deployment_protection_rule", await d.delivery("deployment_protection_rule"), policy),
    );
    expect(answers()[0]!.body).toMatchObject({
      environment_name: "staging",
      state: "approved",
      comment: expect.stringContaining(`${short(d.sha)} deployed to qa first`),
    });
    expect(gh.sent.find((r) => r.path.endsWith("/deployments"))!.query.get("sha")).toBe(d.sha);
  });

  it("re-evaluates a wait on `after` when a deployment status arrives for the sha", async () => {
    environment("staging", { rule: true });
    const d = await deploy([{ name: "deploy", environment: "staging" }]);
    const qa = deployments().createDeployment(repo(), { sha: d.sha, ref: "main", environment: "qa" });
    deployments().addStatus(repo(), qa, "in_progress");
    const handling = handler();
    await handling.handle(
      h.context("deployment_protection_rule", await d.delivery("deployment_protection_rule"), policy),
    );
    expect(answers()[0]!.body).toEqual({
      environment_name: "staging",
      comment: expect.stringContaining(`the deployment of ${short(d.sha)} to qa has not finished`),
    });

    // A status saying qa is still under way (as Steward's own approval of a gate causes) settles
    // nothing: no wait is re-evaluated, nothing is read.
    deployments().addStatus(repo(), qa, "queued");
    const [queued] = await gh.hub.control.waitForDeliveries(
      (x) =>
        x.event === "deployment_status" &&
        (x.payload as any).deployment.id === qa.id &&
        (x.payload as any).deployment_status.state === "queued",
    );
    const sentBefore = gh.sent.length;
    expect(
      await handling.handle(h.context("deployment_status", structuredClone(queued!.payload), policy)),
    ).toMatchObject({ status: "skipped" });
    expect(gh.sent.length).toBe(sentBefore);

    deployments().addStatus(repo(), qa, "success");
    const [status] = await gh.hub.control.waitForDeliveries(
      (x) =>
        x.event === "deployment_status" &&
        (x.payload as any).deployment.id === qa.id &&
        (x.payload as any).deployment_status.state === "success",
    );
    expect(
      await handling.handle(h.context("deployment_status", structuredClone(status!.payload), policy)),
    ).toMatchObject({ status: "done", summary: expect.stringContaining("approved staging") });
    expect(answers().at(-1)!.body).toMatchObject({ environment_name: "staging", state: "approved" });
  });

  it("records a refused answer as a non-retryable failure and does not answer again", async () => {
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    const payload = await d.delivery("deployment_protection_rule");
    // The callback names a run nothing waits on: the API refuses (422).
    const other = await deploy([{ name: "lint" }]);
    payload.deployment_callback_url = String(payload.deployment_callback_url).replace(
      `/runs/${d.runId}/`,
      `/runs/${other.runId}/`,
    );
    const handling = handler();
    const out = await handling.handle(h.context("deployment_protection_rule", payload, policy));
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("422") });
    expect(await handling.handle(h.context("deployment_protection_rule", payload, policy))).toMatchObject({
      status: "skipped",
    });
    expect(gh.sent.filter((r) => r.method === "POST").map((r) => r.status)).toEqual([422]);
  });

  it("takes GitHub's 'already decided' as its own answer when an earlier answer's response was lost", async () => {
    // The first approval took effect but its answer never came back; the retry is told the rule
    // was already decided the same way: that is done, not a refusal (nor a dead delivery).
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    const payload = await d.delivery("deployment_protection_rule");
    gh.hub.control.setFault(RULE, { after: true, times: 1 });
    const handling = handler();
    await expect(handling.handle(h.context("deployment_protection_rule", payload, policy))).rejects.toThrow();
    expect(ruleStates(d.runId)).toEqual(["production:approved"]);
    expect(await handling.handle(h.context("deployment_protection_rule", payload, policy))).toMatchObject({
      status: "done",
      summary: expect.stringContaining("approved production"),
    });
    expect(
      gh.hub.control
        .requests()
        .filter((r) => r.method === "POST" && r.path.endsWith("/deployment_protection_rule"))
        .map((r) => r.status),
    ).toEqual([0, 422]);
    expect((await h.store.auditLog({ kind: "deployment_answer" }))[0]!.details).toMatchObject({
      environment: "production",
      state: "approved",
      runId: d.runId,
    });
    expect(await handling.handle(h.context("deployment_protection_rule", payload, policy))).toMatchObject({
      status: "skipped",
      reason: expect.stringContaining("already answered"),
    });
  });

  it("still reports a rule decided the other way as refused", async () => {
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    const payload = await d.delivery("deployment_protection_rule");
    // Another answer (e.g. an earlier, different decision) already rejected it.
    await gh.octokit.request(RULE, {
      owner: ORG,
      repo: REPO,
      run_id: d.runId,
      environment_name: "production",
      state: "rejected",
      comment: "no",
    });
    const out = await handler().handle(h.context("deployment_protection_rule", payload, policy));
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("422") });
  });

  it("throws on a server error and answers on the retry", async () => {
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    const payload = await d.delivery("deployment_protection_rule");
    gh.hub.control.setFault(RULE, { status: 502, times: 1 });
    const handling = handler();
    await expect(handling.handle(h.context("deployment_protection_rule", payload, policy))).rejects.toMatchObject({
      status: 502,
    });
    expect(await handling.handle(h.context("deployment_protection_rule", payload, policy))).toMatchObject({
      status: "done",
    });
    expect(answers()).toHaveLength(1);
    expect(ruleStates(d.runId)).toEqual(["production:approved"]);
  });

  it("rejects rather than wait past GitHub's 30 days", async () => {
    environment("production", { rule: true });
    const d = await deploy(GREEN_PRODUCTION, { ready: ["build", "test"] });
    const payload = await d.delivery("deployment_protection_rule");
    // The handler's clock: the first Saturday afternoon more than 30 days after the deployment.
    const later = new Date(Date.parse(payload.deployment.created_at) + 31 * 86_400_000);
    while (later.getUTCDay() !== 6) later.setUTCDate(later.getUTCDate() + 1);
    later.setUTCHours(15, 0, 0, 0);
    clock = later;
    await handler().handle(h.context("deployment_protection_rule", payload, policy));
    expect(answers()[0]!.body).toMatchObject({ state: "rejected", comment: expect.stringContaining("30 days") });
  });
});

describe("deployments handler: required reviewer", () => {
  it("reviews the environments it has a policy for with the reviewer token", async () => {
    const preview = environment("preview-7", { reviewers: [REVIEWER] });
    environment("qa", { reviewers: [REVIEWER] });
    environment("production", { reviewers: ["dev-dana"] });
    const d = await deploy([
      { name: "preview", environment: "preview-7" },
      { name: "qa", environment: "qa" },
      { name: "prod", environment: "production" },
    ]);
    const job = await d.delivery("workflow_job", { action: "waiting" });
    const out = await handler().handle(h.context("workflow_job", job, policy));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("approved preview-7") });
    const posts = gh.sent.filter((r) => r.method === "POST");
    expect(posts).toHaveLength(1);
    expect(posts[0]!.as).toBe(REVIEWER);
    expect(posts[0]!.body).toEqual({
      environment_ids: [preview],
      state: "approved",
      comment: "Steward approved the deployment to preview-7:\n- every deployment to preview-7 is approved by policy",
    });
    expect(
      deployments()
        .gatesOf(d.runId)
        .filter((g) => g.outcome === "pending")
        .map((g) => g.environment)
        .sort(),
    ).toEqual(["production", "qa"]);
    // Neither token reaches the logs.
    expect(h.logLines.length).toBeGreaterThan(0);
    expect(h.logLines.join("\n")).not.toMatch(/gh[psu]_[A-Za-z0-9_]{16,}/);
  });

  it("reports the hub's 422 when the reviewer may not approve after all", async () => {
    environment("preview-7", { reviewers: [REVIEWER] });
    const d = await deploy([{ name: "deploy", environment: "preview-7" }]);
    // Between listing and reviewing, the reviewer was taken off the environment's list.
    gh.hub.control.setFault(REVIEW, {
      status: 422,
      message: `${REVIEWER} is not a required reviewer for environment preview-7`,
      times: 1,
    });
    const out = await handler().handle(
      h.context("workflow_job", await d.delivery("workflow_job", { action: "waiting" }), policy),
    );
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("422") });
  });

  it("never reviews with the installation token: GitHub says it may not approve, and a 403 on a review is final", async () => {
    environment("preview-7", { reviewers: [REVIEWER] });
    const d = await deploy([{ name: "deploy", environment: "preview-7" }]);
    const job = await d.delivery("workflow_job", { action: "waiting" });
    const asInstallation = createDeploymentsHandler({ now: () => clock, reviewerOctokit: () => gh.octokit });
    expect(await asInstallation.handle(h.context("workflow_job", job, policy))).toMatchObject({
      status: "skipped",
      reason: "the reviewer token may not approve preview-7",
    });
    expect(gh.sent.filter((r) => r.method === "POST")).toEqual([]);

    // The reviewer's token lost access between listing and reviewing.
    gh.hub.control.setFault(REVIEW, {
      status: 403,
      message: "Resource not accessible by personal access token",
      times: 1,
    });
    const out = await handler().handle(h.context("workflow_job", job, policy));
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("403") });
  });

  it("skips waiting runs when no reviewer token is configured", async () => {
    environment("preview-7", { reviewers: [REVIEWER] });
    const d = await deploy([{ name: "deploy", environment: "preview-7" }]);
    const deploymentsHandler = createDeploymentsHandler({ now: () => clock, reviewerOctokit: () => undefined });
    expect(
      await deploymentsHandler.handle(
        h.context("workflow_job", await d.delivery("workflow_job", { action: "waiting" }), policy),
      ),
    ).toMatchObject({ status: "skipped", reason: expect.stringContaining("STEWARD_REVIEWER_TOKEN") });
    expect(reviewerOctokitFrom({ reviewerToken: undefined, apiUrl: gh.hub.url } as never)).toBeUndefined();
  });

  it("builds the reviewer client against the configured API host only", async () => {
    environment("preview-7", { reviewers: [REVIEWER] });
    const d = await deploy([{ name: "deploy", environment: "preview-7" }]);
    const octokit = reviewerOctokitFrom({
      reviewerToken: gh.hub.control.userToken(REVIEWER),
      apiUrl: gh.hub.url,
    } as never)!;
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
      owner: ORG,
      repo: REPO,
      run_id: d.runId,
    });
    expect(data[0]!.current_user_can_approve).toBe(true);
    expect(
      gh.hub.control
        .requests()
        .filter((r) => r.path.endsWith("/pending_deployments"))
        .map((r) => r.auth),
    ).toEqual(["user"]);
  });

  it("records deployment reviews as an audit trail", async () => {
    const review = example("deployment_review", "requested");
    review.action = "approved";
    review.approver = { login: "octocat" };
    review.comment = "ship it";
    delete review.workflow_job_run;
    delete review.environment;
    review.workflow_job_runs = [{ environment: "production" }];
    const out = await handler().handle(h.context("deployment_review", review, policy));
    expect(out).toMatchObject({ status: "done" });
    const [entry] = await h.store.auditLog({ kind: "deployment_review" });
    expect(entry!.details).toMatchObject({
      action: "approved",
      by: "octocat",
      comment: "ship it",
      environments: ["production"],
      runId: review.workflow_run.id,
      repository: "terraform-test-github/sample-app",
    });
    expect(gh.sent).toEqual([]);
  });
});
