// Per-job re-runs (`rerun.mode: jobs`) and budgets (GitHub's cap, `rerun.daily_budget`), end to end
// against the sandbox hub: the hub's request log and run attempts judge.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import {
  ORG,
  newRepo,
  outcomesOf,
  rerunChecks,
  rerunRequestLog,
  rerunPolicyYaml,
  settle,
  startRerunStack,
} from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

const THREE_JOBS = [
  { name: "lint" },
  { name: "integration-db" },
  { name: "unit" },
  { name: "report", needs: ["integration-db"] },
];

const rerunRequests = (repo: string) => rerunRequestLog(stack, repo);

describe("rerun.mode: jobs", () => {
  it("re-runs only the transient job; the real failure stays failed and the check run says why", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  mode: jobs\n"));
    const { actions } = stack.hub.domains;
    const run = actions.startRun({ owner: ORG, repo, workflow: "CI", jobs: THREE_JOBS });
    actions.scriptAttempt(run.id, 2, "success");
    actions.completeJob({ runId: run.id, job: "lint" });
    actions.failJob({ runId: run.id, job: "unit", log: "AssertionError: expected 1 to be 2" });
    actions.failJob({ runId: run.id, job: "integration-db", log: "read ECONNRESET" });
    await settle(stack);

    expect(rerunRequests(repo)).toEqual(["job integration-db 201"]);
    // Attempt 2 re-ran the job and its dependent; unit kept its failure from attempt 1.
    const attempt2 = actions.jobsOf(run, 2).map((j) => `${j.name}:${j.attempt}:${j.conclusion}`);
    expect(attempt2).toEqual(["lint:1:success", "integration-db:2:success", "unit:1:failure", "report:2:success"]);
    expect(run.attempts[1]!.mode).toBe("job");

    const summary = rerunChecks(stack, run.head_sha)
      .map((c) => c.output.summary)
      .join("\n");
    expect(summary).toContain(
      "re-ran job integration-db and its dependents alone; the other failed jobs stay failed (attempt 2 of 2)",
    );
    expect(summary).toMatch(/unit stays failed: not transient \(no rule matched/);
    expect((await outcomesOf(stack, run.id))[0]).toEqual({
      attempt: 1,
      status: "done",
      detail: expect.stringContaining("re-ran job integration-db"),
    });
  });

  it("re-runs every failed job in one request when all are transient", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  mode: jobs\n", "  rules: []\n"));
    const { actions } = stack.hub.domains;
    const run = actions.startRun({ owner: ORG, repo, workflow: "CI", jobs: THREE_JOBS });
    actions.scriptAttempt(run.id, 2, "success");
    actions.completeJob({ runId: run.id, job: "lint" });
    actions.failJob({ runId: run.id, job: "unit" });
    actions.failJob({ runId: run.id, job: "integration-db" });
    await settle(stack);
    expect(rerunRequests(repo)).toEqual(["rerun-failed-jobs 201"]);
  });

  it("with several transient jobs and a real one, re-runs them one attempt at a time", async () => {
    const { repo } = newRepo(
      stack,
      rerunPolicyYaml("  mode: jobs\n  max_attempts: 5\n", '  rules:\n    - jobs: ["integration-*", "lint"]\n'),
    );
    const { actions } = stack.hub.domains;
    const run = actions.startRun({ owner: ORG, repo, workflow: "CI", jobs: THREE_JOBS });
    actions.scriptAttempt(run.id, 2, "success");
    actions.scriptAttempt(run.id, 3, "success");
    actions.failJob({ runId: run.id, job: "lint" });
    actions.failJob({ runId: run.id, job: "unit" });
    actions.failJob({ runId: run.id, job: "integration-db" });
    await settle(stack);

    expect(rerunRequests(repo)).toEqual(["job lint 201", "job integration-db 201"]);
    expect(actions.jobsOf(run).map((j) => `${j.name}:${j.conclusion}`)).toEqual([
      "lint:success",
      "integration-db:success",
      "unit:failure",
      "report:success",
    ]);
    const outs = await outcomesOf(stack, run.id);
    expect(outs.map((o) => `${o.attempt}:${o.status}`)).toEqual(["1:done", "2:done", "3:done"]);
    expect(outs[2]!.detail).toContain("not re-run: 1 of 1 failed jobs are not transient: unit");
  });
});

describe("budgets", () => {
  it("stops at the repository's daily budget and says so in the check run", async () => {
    const { repo, sha } = newRepo(stack, rerunPolicyYaml("  daily_budget: 1\n", "  rules: []\n"));
    const { actions } = stack.hub.domains;
    const first = actions.startRun({ owner: ORG, repo, workflow: "CI" });
    actions.scriptAttempt(first.id, 2, "success");
    actions.failJob({ runId: first.id, job: "build" });
    await settle(stack);
    sha();
    const second = actions.startRun({ owner: ORG, repo, workflow: "CI" });
    actions.failJob({ runId: second.id, job: "build" });
    await settle(stack);

    expect(rerunRequests(repo)).toEqual(["rerun-failed-jobs 201"]);
    expect(second.attempts).toHaveLength(1);
    const [check] = rerunChecks(stack, second.head_sha);
    expect(check!.output.summary).toContain(
      "budget: the repository's daily budget of 1 re-runs is spent (1 today, rerun.daily_budget)",
    );
  });

  it("makes every one of GitHub's 50 re-runs of one run (attempt 51) and asks for no more", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  max_attempts: 51\n", "  rules: []\n"));
    const { actions } = stack.hub.domains;
    const run = actions.startRun({ owner: ORG, repo, workflow: "CI" });
    for (let n = 2; n <= 51; n++) actions.scriptAttempt(run.id, n, "failure");
    actions.failJob({ runId: run.id, job: "build" });
    await settle(stack);

    expect(run.attempts).toHaveLength(51);
    expect(rerunRequests(repo).every((r) => r.endsWith(" 201"))).toBe(true);
    expect(rerunRequests(repo)).toHaveLength(50);
    const [check] = rerunChecks(stack, run.head_sha);
    expect(check!.output.title).toBe("Did not re-run CI attempt 51: GitHub's limit of re-runs reached");
    expect(check!.output.summary).toContain(
      "GitHub's re-run limit: attempt 51 is the last GitHub allows (50 re-runs of one run)",
    );
    // Fifty decisions and re-runs one after another: a loaded machine needs more than the default.
  }, 180_000);
});
