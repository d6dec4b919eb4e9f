// The handler carrying out decisions against a local stand-in API: both answering paths, waits
// that survive a new handler instance, re-evaluation on completed checks, refusals, redelivery.
import examples from "@octokit/webhooks-examples" with { type: "json" };
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ScheduleRequest } from "../../../src/handler.js";
import { createDeploymentsHandler } from "../../../handlers/deployments/index.js";
import { reviewerOctokitFrom } from "../../../handlers/deployments/answer.js";
import type { DeploymentsPolicy } from "../../../handlers/deployments/policy.js";
import { INSTALLATION_TOKEN, makeHarness, octokitFor, REVIEWER_TOKEN, startFakeApi, type FakeDeployState, type Harness } from "./fake-api.js";

const SHA = "16c5286e8d9a0629956a28938386b36608707a71";
const RUN = 4747967848;
const MONDAY = new Date("2026-11-23T09:00:00Z"); // 10:00 in Paris
const SATURDAY = new Date("2026-11-21T15:00:00Z");

type Example = { name: string; examples: Record<string, any>[] };
const all = examples as unknown as Example[];
const example = (name: string, action: string) => structuredClone(all.find((e) => e.name === name)!.examples.find((e) => e.action === action)!);

function protectionPayload(over: Record<string, unknown> = {}): Record<string, any> {
  const base = example("workflow_job", "waiting");
  return {
    action: "requested",
    environment: "production",
    event: "push",
    ref: "refs/heads/main",
    sha: SHA,
    deployment_callback_url: `https://api.github.com/repos/lineville/elastic-machines-testing/actions/runs/${RUN}/deployment_protection_rule`,
    deployment: { id: 1, sha: SHA, ref: "main", environment: "production", created_at: "2026-11-23T08:55:00Z" },
    pull_requests: [],
    repository: base.repository,
    installation: base.installation,
    sender: base.sender,
    ...over,
  };
}

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

let state: FakeDeployState;
let api: Awaited<ReturnType<typeof startFakeApi>>;
let h: Harness;
let clock: Date;

function handler() {
  return createDeploymentsHandler({ now: () => clock, reviewerOctokit: () => octokitFor(api.url, REVIEWER_TOKEN) });
}

const answers = () => api.requests.filter((r) => r.method === "POST" && r.status < 300);

beforeEach(async () => {
  clock = MONDAY;
  state = {
    runs: { [RUN]: { head_sha: SHA, head_branch: "main", status: "waiting" } },
    checkRuns: { [SHA]: [{ name: "build", status: "completed", conclusion: "success" }, { name: "test", status: "completed", conclusion: "success" }] },
    deployments: [],
    pending: {},
    waitingRules: new Set([`${RUN}:production`, `${RUN}:staging`, `${RUN}:qa`]),
    failNextPosts: [],
  };
  api = await startFakeApi(state);
  h = makeHarness(api.url);
});

afterEach(async () => {
  await api.close();
});

describe("deployments handler: protection rule", () => {
  it("approves main with green checks inside the window, once under redelivery", async () => {
    const deployments = handler();
    const payload = protectionPayload();
    const first = await deployments.handle(h.context("deployment_protection_rule", payload, policy));
    expect(first).toMatchObject({ status: "done" });
    const again = await deployments.handle(h.context("deployment_protection_rule", payload, policy));
    expect(again).toMatchObject({ status: "skipped", reason: expect.stringContaining("already answered") });

    expect(answers()).toHaveLength(1);
    const post = answers()[0]!;
    expect(post.path).toBe(`/repos/lineville/elastic-machines-testing/actions/runs/${RUN}/deployment_protection_rule`);
    expect(post.authorization).toBe(`token ${INSTALLATION_TOKEN}`);
    expect(post.body).toEqual({
      environment_name: "production",
      state: "approved",
      comment: [
        "Steward approved the deployment to production:",
        "- `main` may deploy to production",
        "- checks `build`, `test` succeeded on 16c5286",
        "- inside deploy window Mon-Fri 09:00-17:00 Europe/Paris",
      ].join("\n"),
    });
    const checkRead = api.requests.find((r) => r.path.endsWith("/check-runs"))!;
    expect(checkRead.query).toContain("filter=latest");
    expect((await h.store.auditLog({ kind: "deployment_answer" }))[0]!.details).toMatchObject({ environment: "production", state: "approved", runId: RUN });
  });

  it("rejects a feature branch with the reason", async () => {
    const out = await handler().handle(h.context("deployment_protection_rule", protectionPayload({ ref: "refs/heads/feature/x" }), policy));
    expect(out).toMatchObject({ status: "done" });
    expect(answers()[0]!.body).toMatchObject({ state: "rejected", comment: expect.stringContaining("`feature/x` may not deploy to production (allowed: `main`, `v*`)") });
  });

  it("reads ref and sha from the run when an older payload lacks them", async () => {
    const payload = protectionPayload({ ref: undefined, sha: undefined, deployment: undefined });
    await handler().handle(h.context("deployment_protection_rule", payload, policy));
    expect(api.requests.some((r) => r.method === "GET" && r.path.endsWith(`/actions/runs/${RUN}`))).toBe(true);
    expect(answers()[0]!.body).toMatchObject({ state: "approved" });
  });

  describe("a fork pull request's run", () => {
    const base = () => protectionPayload().repository as { id: number; full_name: string };
    const forkRun = (head: Record<string, unknown>) => {
      state.runs[RUN] = { head_sha: SHA, head_branch: "main", status: "waiting", repository: { id: base().id, full_name: base().full_name }, head_repository: head };
    };
    const FORK_REASON = "the code comes from fork contributor/elastic-machines-testing: Steward never approves deploying a fork's code";

    it("is rejected though its branch is named main, after reading the run and nothing else", async () => {
      forkRun({ id: 900, full_name: "contributor/elastic-machines-testing" });
      const out = await handler().handle(h.context("deployment_protection_rule", protectionPayload({ event: "pull_request", ref: "main" }), policy));
      expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("rejected production") });
      expect(answers().map((a) => a.body)).toEqual([{ environment_name: "production", state: "rejected", comment: `Steward rejected the deployment to production:\n- ${FORK_REASON}` }]);
      expect(api.requests.filter((r) => r.method === "GET").map((r) => r.path)).toEqual([`/repos/lineville/elastic-machines-testing/actions/runs/${RUN}`]);
    });

    it("is rejected where the policy approves always", async () => {
      forkRun({ id: 900, full_name: "contributor/elastic-machines-testing" });
      state.waitingRules.add(`${RUN}:preview-7`);
      await handler().handle(h.context("deployment_protection_rule", protectionPayload({ event: "pull_request", environment: "preview-7" }), policy));
      expect(answers().map((a) => a.body)).toEqual([{ environment_name: "preview-7", state: "rejected", comment: `Steward rejected the deployment to preview-7:\n- ${FORK_REASON}` }]);
    });

    it("of the repository's own branch is judged by the policy as before", async () => {
      forkRun({ id: base().id, full_name: base().full_name });
      await handler().handle(h.context("deployment_protection_rule", protectionPayload({ event: "pull_request", ref: "main" }), policy));
      expect(answers()[0]!.body).toMatchObject({ state: "approved" });
    });

    it("is rejected by the required reviewer too, the run read because a job does not say whose code it runs", async () => {
      forkRun({ id: 900, full_name: "contributor/elastic-machines-testing" });
      state.pending[RUN] = [{ id: 1, name: "preview-7", reviewers: [REVIEWER_TOKEN] }];
      const job = example("workflow_job", "waiting");
      job.workflow_job.run_id = RUN;
      job.workflow_job.head_sha = SHA;
      const out = await handler().handle(h.context("workflow_job", job, policy));
      expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("rejected preview-7") });
      const posts = api.requests.filter((r) => r.method === "POST");
      expect(posts.map((p) => [p.authorization, p.body])).toEqual([[`token ${REVIEWER_TOKEN}`, { environment_ids: [1], state: "rejected", comment: `Steward rejected the deployment to preview-7:\n- ${FORK_REASON}` }]]);
    });
  });

  it("leaves environments without a policy entry alone", async () => {
    const out = await handler().handle(h.context("deployment_protection_rule", protectionPayload({ environment: "qa" }), policy));
    expect(out).toMatchObject({ status: "skipped", reason: "no deployments policy matches environment qa" });
    expect(api.requests.filter((r) => r.method === "POST")).toEqual([]);
  });

  it("waits on a running check with one comment-only status, then approves when the check completes", async () => {
    state.checkRuns[SHA]![1] = { name: "test", status: "in_progress", conclusion: null };
    const deployments = handler();
    const payload = protectionPayload();
    expect(await deployments.handle(h.context("deployment_protection_rule", payload, policy))).toMatchObject({ status: "done", summary: expect.stringContaining("waiting") });
    // A redelivery while waiting does not announce the same wait again.
    await deployments.handle(h.context("deployment_protection_rule", payload, policy));
    expect(answers()).toHaveLength(1);
    expect(answers()[0]!.body).toEqual({
      environment_name: "production",
      comment: "Steward is holding the deployment to production (it is rejected at 2026-12-22 08:55 UTC if still waiting):\n- check `test` is still running on 16c5286",
    });
    expect(h.scheduled.at(-1)).toMatchObject({ key: `rule:lineville/elastic-machines-testing:${RUN}:production`, installationId: 7, replace: true });

    // A check on another sha settles nothing.
    const otherCheck = example("check_run", "completed");
    otherCheck.check_run.head_sha = "f".repeat(40);
    otherCheck.repository = payload.repository;
    expect(await deployments.handle(h.context("check_run", otherCheck, policy))).toMatchObject({ status: "skipped" });

    state.checkRuns[SHA]![1] = { name: "test", status: "completed", conclusion: "success" };
    const check = example("check_run", "completed");
    check.check_run.head_sha = SHA;
    check.repository = payload.repository;
    expect(await deployments.handle(h.context("check_run", check, policy))).toMatchObject({ status: "done", summary: expect.stringContaining("approved production") });
    expect(answers().at(-1)!.body).toMatchObject({ state: "approved" });
    expect(await h.store.list("deployments:wait:")).toEqual([]);
    expect(h.cancelled).toContain(`rule:lineville/elastic-machines-testing:${RUN}:production`);
  });

  it("waits outside the window and approves from the scheduled task, in a new handler instance", async () => {
    clock = SATURDAY;
    await handler().handle(h.context("deployment_protection_rule", protectionPayload(), policy));
    expect(answers()[0]!.body!.comment).toContain("outside deploy window Mon-Fri 09:00-17:00 Europe/Paris; next window opens 2026-11-23 09:00 CET");
    const task = h.scheduled.at(-1)!;
    // Scheduled by delay on the service clock: Saturday 15:00 UTC to Monday 08:00 UTC is 41 hours.
    const delay = task.runAt.getTime() - Date.now();
    expect(delay).toBeGreaterThan(41 * 3_600_000 - 60_000);
    expect(delay).toBeLessThanOrEqual(41 * 3_600_000);

    clock = new Date("2026-11-23T08:00:00Z");
    const restarted = handler();
    // At start, every wait is re-evaluated at once (the clock may have moved on while down).
    const atStart: ScheduleRequest[] = [];
    const service = { store: h.store, log: pino({ level: "silent" }), config: {} as never, signal: new AbortController().signal, octokitFor: async () => { throw new Error("unused"); }, appOctokit: async () => { throw new Error("unused"); } };
    await restarted.start!({ ...service, scheduler: { schedule: async (r) => void atStart.push(r), cancel: async () => {} } });
    expect(atStart).toHaveLength(1);
    expect(atStart[0]).toMatchObject({ key: `deployments:${task.key}`, data: task.data, installationId: 7, replace: true });
    expect(atStart[0]!.runAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await restarted.onTask!(h.task(task, policy))).toMatchObject({ status: "done" });
    expect(answers().at(-1)!.body).toMatchObject({ state: "approved" });
    // The task firing again (e.g. a retry) finds nothing left to do.
    expect(await restarted.onTask!(h.task(task, policy))).toMatchObject({ status: "skipped" });
    expect(answers().filter((a) => a.body?.state)).toHaveLength(1);
  });

  it("checks `after` through deployments and their latest statuses", async () => {
    state.deployments.push({ id: 50, sha: SHA, environment: "qa", statuses: ["failure"] }, { id: 51, sha: SHA, environment: "qa", statuses: ["success", "in_progress"] });
    await handler().handle(h.context("deployment_protection_rule", protectionPayload({ environment: "staging" }), policy));
    expect(answers()[0]!.body).toMatchObject({ environment_name: "staging", state: "approved", comment: expect.stringContaining("16c5286 deployed to qa first") });
    expect(api.requests.find((r) => r.path.endsWith("/deployments"))!.query).toContain(`sha=${SHA}`);
  });

  it("re-evaluates a wait on `after` when a deployment status arrives for the sha", async () => {
    state.deployments.push({ id: 60, sha: SHA, environment: "qa", statuses: ["in_progress"] });
    const deployments = handler();
    const payload = protectionPayload({ environment: "staging" });
    await deployments.handle(h.context("deployment_protection_rule", payload, policy));
    expect(answers()[0]!.body).toEqual({ environment_name: "staging", comment: expect.stringContaining("the deployment of 16c5286 to qa has not finished") });

    state.deployments[0]!.statuses.unshift("success");
    const status = { action: "created", deployment: { id: 60, sha: SHA, environment: "qa" }, deployment_status: { state: "success" }, repository: payload.repository, installation: payload.installation };
    expect(await deployments.handle(h.context("deployment_status", status, policy))).toMatchObject({ status: "done", summary: expect.stringContaining("approved staging") });
    expect(answers().at(-1)!.body).toMatchObject({ environment_name: "staging", state: "approved" });
  });

  it("records a refused answer as a non-retryable failure and does not answer again", async () => {
    state.waitingRules.clear();
    const deployments = handler();
    const out = await deployments.handle(h.context("deployment_protection_rule", protectionPayload(), policy));
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("422") });
    expect(await deployments.handle(h.context("deployment_protection_rule", protectionPayload(), policy))).toMatchObject({ status: "skipped" });
  });

  it("takes GitHub's 'already decided' as its own answer when an earlier answer's response was lost", async () => {
    // The first approval took effect but its answer never came back; the retry is told the rule
    // was already decided the same way: that is done, not a refusal (nor a dead delivery).
    state.failNextPosts.push({ status: 422, message: "The deployment protection rule for environment production was already decided (approved)" });
    const deployments = handler();
    expect(await deployments.handle(h.context("deployment_protection_rule", protectionPayload(), policy))).toMatchObject({ status: "done", summary: expect.stringContaining("approved production") });
    expect((await h.store.auditLog({ kind: "deployment_answer" }))[0]!.details).toMatchObject({ environment: "production", state: "approved", runId: RUN });
    expect(await deployments.handle(h.context("deployment_protection_rule", protectionPayload(), policy))).toMatchObject({ status: "skipped", reason: expect.stringContaining("already answered") });
  });

  it("still reports a rule decided the other way as refused", async () => {
    state.failNextPosts.push({ status: 422, message: "The deployment protection rule for environment production was already decided (rejected)" });
    const out = await handler().handle(h.context("deployment_protection_rule", protectionPayload(), policy));
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("422") });
  });

  it("throws on a server error and answers on the retry", async () => {
    state.failNextPosts.push({ status: 502, message: "Bad Gateway" });
    const deployments = handler();
    await expect(deployments.handle(h.context("deployment_protection_rule", protectionPayload(), policy))).rejects.toMatchObject({ status: 502 });
    expect(await deployments.handle(h.context("deployment_protection_rule", protectionPayload(), policy))).toMatchObject({ status: "done" });
    expect(answers()).toHaveLength(1);
  });

  it("rejects rather than wait past GitHub's 30 days", async () => {
    clock = SATURDAY;
    const payload = protectionPayload({ deployment: { id: 1, sha: SHA, ref: "main", environment: "production", created_at: "2026-10-20T00:00:00Z" } });
    await handler().handle(h.context("deployment_protection_rule", payload, policy));
    expect(answers()[0]!.body).toMatchObject({ state: "rejected", comment: expect.stringContaining("30 days") });
  });
});

describe("deployments handler: required reviewer", () => {
  const waitingJob = () => {
    const p = example("workflow_job", "waiting");
    p.workflow_job.run_id = RUN;
    p.workflow_job.head_sha = SHA;
    return p;
  };

  it("reviews the environments it has a policy for with the reviewer token", async () => {
    state.pending[RUN] = [
      { id: 1, name: "preview-7", reviewers: [REVIEWER_TOKEN] },
      { id: 2, name: "qa", reviewers: [REVIEWER_TOKEN] },
      { id: 3, name: "production", reviewers: ["someone-else"] },
    ];
    const out = await handler().handle(h.context("workflow_job", waitingJob(), policy));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("approved preview-7") });
    const posts = api.requests.filter((r) => r.method === "POST");
    expect(posts).toHaveLength(1);
    expect(posts[0]!.authorization).toBe(`token ${REVIEWER_TOKEN}`);
    expect(posts[0]!.body).toEqual({ environment_ids: [1], state: "approved", comment: "Steward approved the deployment to preview-7:\n- every deployment to preview-7 is approved by policy" });
    expect(state.pending[RUN]!.map((e) => e.id)).toEqual([2, 3]);
    // The reviewer token never reaches the logs.
    expect(h.logLines.join("\n")).not.toContain(REVIEWER_TOKEN);
    expect(h.logLines.join("\n")).not.toContain(INSTALLATION_TOKEN);
  });

  it("reports the hub's 422 when the reviewer may not approve after all", async () => {
    state.pending[RUN] = [{ id: 1, name: "preview-7", reviewers: [REVIEWER_TOKEN] }];
    state.failNextPosts.push({ status: 422, message: "ghost is not a required reviewer for environment preview-7" });
    const out = await handler().handle(h.context("workflow_job", waitingJob(), policy));
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("422") });
  });

  it("is refused with 403 when the review is sent with the installation token", async () => {
    state.pending[RUN] = [{ id: 1, name: "preview-7", reviewers: [REVIEWER_TOKEN, INSTALLATION_TOKEN] }];
    const deployments = createDeploymentsHandler({ now: () => clock, reviewerOctokit: () => octokitFor(api.url, INSTALLATION_TOKEN) });
    const out = await deployments.handle(h.context("workflow_job", waitingJob(), policy));
    expect(out).toMatchObject({ status: "failed", retryable: false, error: expect.stringContaining("403") });
  });

  it("skips waiting runs when no reviewer token is configured", async () => {
    const deployments = createDeploymentsHandler({ now: () => clock, reviewerOctokit: () => undefined });
    expect(await deployments.handle(h.context("workflow_job", waitingJob(), policy))).toMatchObject({ status: "skipped", reason: expect.stringContaining("STEWARD_REVIEWER_TOKEN") });
    expect(reviewerOctokitFrom({ reviewerToken: undefined, apiUrl: api.url } as never)).toBeUndefined();
  });

  it("builds the reviewer client against the configured API host only", async () => {
    state.pending[RUN] = [{ id: 1, name: "preview-7", reviewers: [REVIEWER_TOKEN] }];
    const octokit = reviewerOctokitFrom({ reviewerToken: REVIEWER_TOKEN, apiUrl: api.url } as never)!;
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", { owner: "o", repo: "r", run_id: RUN });
    expect(data[0]!.current_user_can_approve).toBe(true);
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
    expect(entry!.details).toMatchObject({ action: "approved", by: "octocat", comment: "ship it", environments: ["production"], runId: review.workflow_run.id, repository: "terraform-test-github/sample-app" });
  });
});
