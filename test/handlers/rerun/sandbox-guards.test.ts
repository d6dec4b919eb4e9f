// The rerun handler end to end, its guards: attempt cap, superseded runs, too many failures,
// scope, idempotency, the API's refusals and the durable delay, against the sandbox stack.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import {
  ORG,
  beforeRerunLands,
  completedDeliveries,
  holdDeliveries,
  newRepo,
  outcomesOf,
  redeliver,
  requestsFor,
  rerunChecks,
  rerunPolicyYaml,
  rerunPosts,
  settle,
  startCi,
  stewardOf,
  startRerunStack,
} from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

describe("rerun against the sandbox hub: guards, idempotency, refusals, delay", () => {
  it("gives up when the attempts are exhausted, counting from run_attempt", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  max_attempts: 2\n"));
    const { actions } = stack.hub.domains;
    const run = startCi(stack, repo);
    actions.scriptAttempt(run.id, 2, {
      "integration-db": { conclusion: "failure", step: "Install deps", log: "ECONNRESET again" },
    });
    actions.failJob({ runId: run.id, job: "integration-db", step: "Install deps", log: "read ECONNRESET" });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
    expect(run.attempts).toHaveLength(2);
    const summary = rerunChecks(stack, run.head_sha)[0]!.output.summary!;
    expect(summary).toContain("attempt 2 of 2: attempts exhausted (rerun.max_attempts)");
    expect(summary).toMatch(/integration-db \| failure \| yes \| matched rule 1/);
  });

  it("does not re-run a run its branch has moved past", async () => {
    const { repo, sha } = newRepo(stack, rerunPolicyYaml(""));
    const run = startCi(stack, repo);
    sha(); // a newer commit on main
    stack.hub.domains.actions.failJob({
      runId: run.id,
      job: "integration-db",
      step: "Install deps",
      log: "ECONNRESET",
    });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(rerunChecks(stack, run.head_sha)).toEqual([]);
    expect(await outcomesOf(stack, run.id)).toEqual([
      { attempt: 1, status: "skipped", detail: expect.stringMatching(/^superseded: branch main is now at/) },
    ]);
  });

  it("does not re-run a pull request run whose pull request has a newer head", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const { control, domains } = stack.hub;
    const pr = control.openPullRequest({ owner: ORG, repo, head: "feature/x", files: { "a.txt": "1\n" }, title: "x" });
    const run = startCi(stack, repo, {
      branch: "feature/x",
      sha: pr.head_sha,
      event: "pull_request",
      pullRequests: [{ number: pr.number, head: { sha: pr.head_sha, ref: "feature/x" } }],
    });
    control.pushToPullRequest({ owner: ORG, repo, number: pr.number, files: { "a.txt": "2\n" } });
    domains.actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(await outcomesOf(stack, run.id)).toEqual([
      { attempt: 1, status: "skipped", detail: expect.stringContaining(`superseded: pull request #${pr.number}`) },
    ]);
  });

  it("treats more failed jobs than max_failed_jobs as a real breakage", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  max_failed_jobs: 1\n"));
    const { actions } = stack.hub.domains;
    const run = actions.startRun({
      owner: ORG,
      repo,
      workflow: "CI",
      jobs: [{ name: "integration-a" }, { name: "integration-b" }],
    });
    actions.failJob({ runId: run.id, job: "integration-a", log: "ECONNRESET" });
    actions.failJob({ runId: run.id, job: "integration-b", log: "ECONNRESET" });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(requestsFor(stack, repo).some((r) => r.path.endsWith("/logs"))).toBe(false);
    expect(rerunChecks(stack, run.head_sha)[0]!.output.summary).toContain(
      "2 jobs failed, more than rerun.max_failed_jobs (1)",
    );
  });

  it("does nothing without a policy, and nothing for runs out of scope", async () => {
    const { actions } = stack.hub.domains;
    const none = newRepo(stack, undefined);
    const r1 = startCi(stack, none.repo);
    actions.failJob({ runId: r1.id, job: "integration-db", runnerLost: true });
    const scoped = newRepo(stack, rerunPolicyYaml('  branches: ["release/*"]\n  workflows: [CI]\n'));
    const r2 = startCi(stack, scoped.repo);
    actions.failJob({ runId: r2.id, job: "integration-db", runnerLost: true });
    const nightly = newRepo(stack, rerunPolicyYaml(""));
    const r3 = startCi(stack, nightly.repo, { event: "schedule" });
    actions.failJob({ runId: r3.id, job: "integration-db", runnerLost: true });
    await settle(stack);

    expect(await outcomesOf(stack, r1.id)).toEqual([
      { attempt: 1, status: "skipped", detail: expect.stringContaining("not enabled") },
    ]);
    expect(await outcomesOf(stack, r2.id)).toEqual([
      { attempt: 1, status: "skipped", detail: 'branch "main" is not in rerun.branches' },
    ]);
    expect(await outcomesOf(stack, r3.id)).toEqual([
      { attempt: 1, status: "skipped", detail: 'event "schedule" is not in rerun.events' },
    ]);
    for (const { repo } of [none, scoped, nightly]) {
      // Only the policy file was read: no run, job, log or branch read, nothing written.
      expect(requestsFor(stack, repo).filter((r) => !r.path.includes("/contents/"))).toEqual([]);
    }
    for (const r of [r1, r2, r3]) expect(rerunChecks(stack, r.head_sha)).toEqual([]);
  });

  it("re-runs once when the same delivery is redelivered", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const run = startCi(stack, repo);
    stack.hub.domains.actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
    await settle(stack);
    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);

    const [first] = completedDeliveries(stack, run.id);
    await redeliver(stack, first!.id);
    await settle(stack);
    const again = completedDeliveries(stack, run.id).filter((d) => d.guid === first!.guid);
    expect(again.map((d) => d.redelivery)).toEqual([false, true]);
    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
  });

  it("re-runs once when two deliveries report the same run attempt", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const run = startCi(stack, repo);
    const held = await holdDeliveries(stack);
    stack.hub.domains.actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
    await held.release();
    const [completed] = completedDeliveries(stack, run.id);
    // Two deliveries (distinct ids) carrying the same run attempt, as GitHub sometimes sends.
    await Promise.all([
      stack.hub.hub.deliver("workflow_run", completed!.payload, { installationId: completed!.installation_id! }),
      stack.hub.hub.deliver("workflow_run", completed!.payload, { installationId: completed!.installation_id! }),
    ]);
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
    // The held original never reached Steward; of the two it did receive, one re-ran and one stood down.
    const outs = await outcomesOf(stack, run.id);
    expect(outs.map((o) => o.status).sort()).toEqual(["done", "skipped"]);
    expect(outs.find((o) => o.status === "skipped")!.detail).toContain(`run ${run.id} attempt 1 was already decided`);
  });

  it("retries later when the API says the run is already running", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const { actions } = stack.hub.domains;
    const run = startCi(stack, repo);
    actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
    // Someone re-runs by hand just before Steward's request lands: attempt 2 is running.
    await beforeRerunLands(stack, repo, run.id, () => void actions.rerun(run.id, "failed", "user:octocat"));
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 403"]);
    expect(await outcomesOf(stack, run.id)).toEqual([
      {
        attempt: 1,
        status: "done",
        detail: expect.stringContaining('the API said "This workflow is already running"; retrying in 30s'),
      },
    ]);
    const tasks = await stewardOf(stack).store.tasks.listTasks();
    expect(tasks.filter((t) => JSON.stringify(t).includes(`:${run.id}:1:busy:1`))).toHaveLength(1);
    expect(rerunChecks(stack, run.head_sha)).toEqual([]);
  });

  it("records a re-run the API cannot do as skipped, with its reason in the check run", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const { actions, idle } = stack.hub.domains;
    const run = startCi(stack, repo);
    actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
    // Someone re-ran the whole workflow by hand and it passed: no failed job is left to re-run.
    await beforeRerunLands(stack, repo, run.id, async () => {
      actions.rerun(run.id, "all", "user:octocat");
      await idle();
      actions.completeRun(run.id, "success");
    });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 403"]);
    expect(await outcomesOf(stack, run.id)).toEqual([
      {
        attempt: 1,
        status: "skipped",
        detail: expect.stringContaining('the API refused the re-run: "This workflow run cannot be retried"'),
      },
      { attempt: 2, status: "skipped", detail: expect.stringContaining('concluded "success"') },
    ]);
    const [check] = rerunChecks(stack, run.head_sha);
    expect(check!.output.title).toBe("Could not re-run CI attempt 1");
    expect(check!.output.summary).toMatch(/not re-run: the API refused \("This workflow run cannot be retried"\)/);
  });

  it("does not re-run an attempt someone already re-ran by hand", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml(""));
    const { actions } = stack.hub.domains;
    const run = startCi(stack, repo);
    const held = await holdDeliveries(stack);
    actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
    actions.rerun(run.id, "failed", "user:octocat");
    await held.release();
    // The failure's delivery reaches Steward late, when attempt 2 is already running.
    const [completed] = completedDeliveries(stack, run.id);
    await redeliver(stack, completed!.id);
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(await outcomesOf(stack, run.id)).toEqual([
      { attempt: 1, status: "skipped", detail: expect.stringContaining("was re-run meanwhile (now attempt 2)") },
    ]);
  });

  it("waits for the delay in the durable queue, then re-runs", async () => {
    // A delay the test's own steps cannot outlast on a loaded machine, brought due by moving the hub's clock (Steward's).
    const { repo } = newRepo(stack, rerunPolicyYaml("").replace("delay: 0s", "delay: 10m"));
    const run = startCi(stack, repo);
    stack.hub.domains.actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
    await settle(stack);
    // The decision is made and queued; no worker waits and nothing was written yet.
    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(
      (await stewardOf(stack).store.tasks.listTasks()).some(
        (t) => JSON.stringify(t).includes(`rerun:`) && JSON.stringify(t).includes(`"id":${run.id}`),
      ),
    ).toBe(true);

    stack.hub.control.advanceClock(11 * 60_000);
    // The task comes due in the background: wait for its write.
    await vi.waitFor(() => expect(rerunPosts(stack, repo)).not.toEqual([]), { timeout: 45_000, interval: 100 });
    await settle(stack);
    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
    expect(rerunChecks(stack, run.head_sha)[0]!.output.title).toBe("Re-ran CI attempt 1: transient failure");
  }, 90_000);
});
