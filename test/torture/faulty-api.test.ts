// A faulty API, end to end: the sandbox hub answers Steward (every built-in handler) with 5xx
// errors, added latency and dropped connections, then with an exhausted primary rate limit and a
// secondary limit with Retry-After. The hub's own records judge.
// Promise under test: every handler completes once the API recovers, nothing is done twice, and
// waits follow the rate-limit headers instead of hammering the API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import type { RequestRecord } from "@steward/sandbox-hub";
import type { Run } from "@steward/sandbox-hub";
import { newRepo, ORG, outcomesOf, rerunPolicyYaml, settle, startCi, stewardOf } from "../handlers/rerun/stack.js";

const POLICY = ".github/steward.yml";
/** A clock tolerance for comparing recorded timestamps (ordering, not speed). */
const TOLERANCE_MS = 50;

let stack: SandboxStack;
let installationId: number;

beforeAll(async () => {
  stack = await startSandboxStack();
  installationId = stack.hub.control.installation(ORG)!.id;
  // acme/web: re-runs transient failures at once, and guards production as a protection rule app.
  stack.hub.control.pushFiles({
    owner: ORG,
    repo: "web",
    files: {
      [POLICY]: `${rerunPolicyYaml("")}deployments:\n  environments:\n    production:\n      branches: [main]\n`,
    },
    message: "policy",
  });
  stack.hub.domains.deployments.putEnvironment(stack.hub.control.repo(ORG, "web")!, "production", {
    protectionApps: [stack.hub.hub.appId],
  });
  await settle(stack);
});
afterAll(async () => {
  stack?.hub.control.clearFaults();
  stack?.hub.control.setSecondaryLimit(null);
  await stack?.close();
});

const mark = () => stack.hub.control.requests().length;
const since = (from: number) => stack.hub.control.requests().slice(from);
const described = (r: RequestRecord) => `${r.method} ${r.path} ${r.status}`;

/** A CI run whose integration job fails with a network error (a rule matches its log); attempt 2 passes. */
function transientFailure(repo: string): Run {
  const { actions } = stack.hub.domains;
  const run = startCi(stack, repo);
  actions.scriptAttempt(run.id, 2, "success");
  actions.failJob({
    runId: run.id,
    job: "integration-db",
    step: "Install deps",
    log: "npm ERR! network read ECONNRESET",
  });
  return run;
}

/** Re-run requests the hub recorded for a run, as `kind allowed`. */
const reruns = (runId: number) =>
  stack.hub.domains.actions.rerunRequests(runId).map((e) => `${e.kind} ${String(e.detail.allowed)}`);

/** Check runs Steward created, by name, on a commit (from the hub's effects: every create counts). */
const created = (name: string, sha: string) =>
  stack.hub.domains.effects
    .of("checks", "check_run.created")
    .filter((e) => e.detail.name === name && e.detail.head_sha === sha && e.by.startsWith("installation:"));

/** Poll (settling nothing) until `predicate` holds or `ms` elapsed. */
async function waitFor(predicate: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!predicate() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
}

/** Exactly one answer to the run's protection rule, an approval of production, and its gate approved. */
function expectOneApproval(runId: number): void {
  const { domains } = stack.hub;
  const answers = domains.effects
    .of("deployments")
    .filter((e) => e.detail.run_id === runId && /^deployments\.protection_rule\.(approved|rejected)$/.test(e.kind));
  expect(answers.map((e) => `${e.kind} ${String(e.detail.environment)}`)).toEqual([
    "deployments.protection_rule.approved production",
  ]);
  expect(domains.deployments.gatesOf(runId).map((g) => `${g.environment} ${g.outcome}`)).toEqual([
    "production approved",
  ]);
}

/** Every delivery Steward recorded ended done: none failed or parked as dead. */
async function expectEveryDeliveryDone(): Promise<void> {
  const stored = await stewardOf(stack).store.deliveries.listDeliveries();
  expect(stored.filter((d) => d.status !== "done").map((d) => `${d.event} ${d.status} ${d.lastError ?? ""}`)).toEqual(
    [],
  );
}

describe("Steward against a faulty API", () => {
  it("5xx answers, latency and dropped connections: every handler completes once the API recovers, each effect exactly once", async () => {
    const { control, domains } = stack.hub;
    const repos = [0, 1, 2].map(() => newRepo(stack, rerunPolicyYaml("")).repo);
    await settle(stack);
    const from = mark();

    // The first matching rule applies: the writes that matter fail deterministically first
    // (before the hub acts on them), then everything else fails at a rate, slowly.
    // A certain dropped connection early on (the first file read): the protection-rule drop
    // below hits only if a deploy is answered before the faults are cleared.
    control.setFault("GET /repos/{owner}/{repo}/contents/{path+}", { drop: true, times: 1 });
    control.setFault("POST /repos/**/actions/runs/*/rerun-failed-jobs", { status: 502, times: 2 });
    control.setFault("POST /repos/**/actions/runs/*/deployment_protection_rule", { drop: true, times: 1 });
    control.setFault("POST /repos/**/check-runs", { status: 500, times: 2 });
    control.setFault("GET /repos/**/actions/jobs/*/logs", { drop: 0.3, latencyMs: 40 });
    control.setFault("**", { errorRate: 0.15, status: 502, latencyMs: 20 });

    const runs = repos.map((repo) => transientFailure(repo));
    const pr = control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "tune-rerun",
      title: "Allow more attempts",
      files: {
        [POLICY]: `${rerunPolicyYaml("  max_attempts: 4\n")}deployments:\n  environments:\n    production:\n      branches: [main]\n`,
      },
    });
    const deploys = [0, 1].map(
      () =>
        domains.actions.startRun({
          owner: ORG,
          repo: "web",
          workflow: "Deploy",
          jobs: [{ name: "deploy", environment: "production" }],
        }).id,
    );

    // Let Steward struggle through the faults until every path met them (about 4 s when the machine is
    // idle; up to 30 s on a loaded one, so that the faults are exercised there too), then the API recovers.
    const answered = () =>
      deploys.every((id) =>
        domains.effects
          .of("deployments")
          .some((e) => e.kind.startsWith("deployments.protection_rule.") && e.detail.run_id === id),
      );
    await waitFor(
      () =>
        runs.every((r) => reruns(r.id).length > 0) && created("steward/config", pr.head_sha).length > 0 && answered(),
      30_000,
    );
    control.clearFaults();
    await settle(stack);

    const faulted = since(from).filter((r) => r.status === 0 || r.status >= 500);
    expect(faulted.filter((r) => r.status === 0).length).toBeGreaterThan(0);
    expect(faulted.filter((r) => r.status >= 500).length).toBeGreaterThan(0);
    // The hub itself never failed on its own: every 5xx was an injected one.
    expect(control.effects.filter((e) => e.kind === "hub.error")).toEqual([]);

    for (const run of runs) {
      expect(reruns(run.id)).toEqual(["actions.rerun-failed-jobs true"]);
      expect(run.attempts.map((a) => `${a.n}:${a.conclusion}`)).toEqual(["1:failure", "2:success"]);
      expect(created("steward/rerun", run.head_sha)).toHaveLength(1);
      const posts = since(from).filter(
        (r) => r.method === "POST" && r.path.endsWith(`/actions/runs/${run.id}/rerun-failed-jobs`),
      );
      expect(posts.filter((r) => r.status < 300).map(described)).toHaveLength(1);
    }

    const config = created("steward/config", pr.head_sha);
    expect(config).toHaveLength(1);
    const [check] = domains.checks.checkRuns({ owner: ORG, repo: "web", sha: pr.head_sha, name: "steward/config" }) as {
      status: string;
      conclusion: string;
    }[];
    expect([check!.status, check!.conclusion]).toEqual(["completed", "success"]);

    for (const id of deploys) expectOneApproval(id);
    // Every delivery Steward recorded was handled in the end: none failed or parked as dead.
    await expectEveryDeliveryDone();
  }, 90_000);

  it("lost answers of writes that succeeded: each effect still happens exactly once and every delivery ends done", async () => {
    const { control, domains } = stack.hub;
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    await settle(stack);
    const from = mark();

    const run = startCi(stack, repo);
    domains.actions.scriptAttempt(run.id, 2, "success");
    const deploy = domains.actions.startRun({
      owner: ORG,
      repo: "web",
      workflow: "Deploy",
      jobs: [{ name: "deploy", environment: "production" }],
    }).id;
    // The hub acts on each of these writes (a re-run starts, a check run exists, the rule is
    // answered) and then loses the answer: Steward sees a dropped connection, once each.
    control.setFault(`POST /repos/${ORG}/${repo}/actions/runs/${run.id}/rerun-failed-jobs`, { after: true, times: 1 });
    control.setFault(`POST /repos/${ORG}/${repo}/check-runs`, { after: true, times: 1 });
    control.setFault(`POST /repos/${ORG}/web/actions/runs/${deploy}/deployment_protection_rule`, {
      after: true,
      times: 1,
    });
    domains.actions.failJob({
      runId: run.id,
      job: "integration-db",
      step: "Install deps",
      log: "npm ERR! network read ECONNRESET",
    });
    await settle(stack);
    control.clearFaults();
    await settle(stack);

    // Each fault hit: the first request of each kind got no answer.
    const lost = since(from)
      .filter((r) => r.status === 0)
      .map((r) => `${r.method} ${r.route ?? r.path}`);
    expect(lost.sort()).toEqual([
      "POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule",
      "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs",
      "POST /repos/{owner}/{repo}/check-runs",
    ]);

    // One re-run of the attempt, requested once: no retry of the request whose answer was lost
    // (the retried delivery saw the run one attempt further and knew the re-run was its own).
    expect(reruns(run.id)).toEqual(["actions.rerun-failed-jobs true"]);
    expect(
      since(from)
        .filter((r) => r.method === "POST" && r.path.endsWith(`/actions/runs/${run.id}/rerun-failed-jobs`))
        .map((r) => r.status),
    ).toEqual([0]);
    // Steward knew the re-run was its own: the decision on attempt 1 is done, not a refusal.
    expect((await outcomesOf(stack, run.id)).filter((o) => o.attempt === 1).map((o) => o.status)).toEqual(["done"]);
    expect(run.attempts.map((a) => `${a.n}:${a.conclusion}`)).toEqual(["1:failure", "2:success"]);
    // One steward/rerun check run on the commit: the retry found and updated the one whose answer was lost.
    expect(created("steward/rerun", run.head_sha)).toHaveLength(1);
    const checks = domains.checks.checkRuns({ owner: ORG, repo, sha: run.head_sha, name: "steward/rerun" }) as {
      status: string;
      conclusion: string;
    }[];
    expect(checks.map((c) => `${c.status} ${c.conclusion}`)).toEqual(["completed neutral"]);

    // One answer to the protection rule, and the gate is approved.
    expectOneApproval(deploy);

    // Every delivery was handled in the end: none failed or parked as dead.
    await expectEveryDeliveryDone();
  }, 30_000);

  it("an exhausted primary rate limit: no request until the reset, then the work completes", async () => {
    const { control } = stack.hub;
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const run = startCi(stack, repo);
    stack.hub.domains.actions.scriptAttempt(run.id, 2, "success");
    await settle(stack);

    const from = mark();
    const resetAt = new Date(control.now().getTime() + 2_500);
    control.setRateLimit(installationId, { limit: 5000, remaining: 0, resetAt });
    stack.hub.domains.actions.failJob({
      runId: run.id,
      job: "integration-db",
      step: "Install deps",
      log: "npm ERR! network read ECONNRESET",
    });
    await settle(stack);

    const mine = since(from).filter((r) => r.auth === "installation");
    const limited = mine.filter((r) => r.status === 403);
    expect(limited.length).toBeGreaterThan(0);
    const first = limited[0]!;
    // Between the first rate-limited answer and the reset, nothing more was sent with that
    // installation's token: the request that discovered the limit is the only one refused.
    const during = mine.filter((r) => r !== first && r.at >= first.at && r.at < resetAt.getTime());
    expect(during.map(described)).toEqual([]);
    expect(mine.filter((r) => r.at >= resetAt.getTime()).length).toBeGreaterThan(0);

    expect(reruns(run.id)).toEqual(["actions.rerun-failed-jobs true"]);
    expect(created("steward/rerun", run.head_sha)).toHaveLength(1);
    expect(run.attempts.map((a) => `${a.n}:${a.conclusion}`)).toEqual(["1:failure", "2:success"]);
  }, 30_000);

  it("a secondary limit with Retry-After: the next request waits as long as the header says, and the work completes once", async () => {
    const { control } = stack.hub;
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const run = startCi(stack, repo);
    stack.hub.domains.actions.scriptAttempt(run.id, 2, "success");
    await settle(stack);

    const from = mark();
    const retryAfterSec = 1;
    control.setSecondaryLimit({ status: 429, retryAfterSec, nextN: 2 });
    stack.hub.domains.actions.failJob({
      runId: run.id,
      job: "integration-db",
      step: "Install deps",
      log: "npm ERR! network read ECONNRESET",
    });
    await settle(stack);
    control.setSecondaryLimit(null);

    const mine = since(from).filter((r) => r.auth === "installation");
    const refused = mine.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of refused) {
      const next = mine.find((r) => r.at > answer.at && r !== answer);
      expect(next, `a request after ${described(answer)}`).toBeDefined();
      expect(next!.at - answer.at).toBeGreaterThanOrEqual(retryAfterSec * 1000 - TOLERANCE_MS);
    }

    expect(reruns(run.id)).toEqual(["actions.rerun-failed-jobs true"]);
    expect(created("steward/rerun", run.head_sha)).toHaveLength(1);
    expect(run.attempts.map((a) => `${a.n}:${a.conclusion}`)).toEqual(["1:failure", "2:success"]);
  }, 30_000);
});
