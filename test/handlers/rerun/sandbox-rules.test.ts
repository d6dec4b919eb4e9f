// The rerun handler end to end, rule by rule: the sandbox hub runs workflows and delivers real
// workflow_run payloads to Steward, which decides and calls the hub's API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import {
  JOBS,
  ORG,
  newRepo,
  outcomesOf,
  requestsFor,
  rerunChecks,
  rerunPolicyYaml,
  rerunPosts,
  settle,
  startCi,
  startRerunStack,
  stewardOf,
} from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

describe("rerun against the sandbox hub: rules", () => {
  it("re-runs a transient failure, leaves the next attempt's real failure alone, and explains both", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  max_attempts: 3\n"));
    const { actions } = stack.hub.domains;
    const run = startCi(stack, repo);
    actions.scriptAttempt(run.id, 2, {
      "integration-db": { conclusion: "failure", step: "Test", log: "AssertionError: expected 200, received 500" },
    });
    actions.failJob({
      runId: run.id,
      job: "integration-db",
      step: "Install deps",
      log: "npm ERR! network read ECONNRESET",
    });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
    expect(run.attempts.map((a) => `${a.n}:${a.mode}:${a.conclusion}`)).toEqual([
      "1:initial:failure",
      "2:failed:failure",
    ]);

    // Logs: the API answers a redirect; the log host is fetched without credentials.
    const reqs = stack.hub.control.requests();
    const logCalls = requestsFor(stack, repo).filter((r) => /\/actions\/jobs\/\d+\/logs$/.test(r.path));
    expect(logCalls.map((r) => `${r.status} ${r.auth}`)).toEqual(["302 installation", "302 installation"]);
    const blobFetches = reqs.filter((r) => r.path.startsWith("/_sandbox/blobs/"));
    expect(blobFetches.length).toBeGreaterThanOrEqual(2);
    for (const b of blobFetches) expect([b.auth, b.authorization]).toEqual(["none", false]);

    const checks = rerunChecks(stack, run.head_sha);
    expect(checks).toHaveLength(1);
    const [check] = checks;
    expect(check!.conclusion).toBe("neutral");
    expect(check!.output.title).toBe("Did not re-run CI attempt 2");
    const summary = check!.output.summary!;
    expect(summary).toContain(`run ${run.id}](`);
    expect(summary).toMatch(
      /attempt 2\n[\s\S]*\*\*Action:\*\* not re-run\.[\s\S]*integration-db \| failure \| no \| no rule matched \(rule 1: log matches none of \[ECONNRESET, \/lost communication with the server\/i\]; rule 2: step "Test" failed, so the runner was not lost\)/,
    );
    expect(summary).toMatch(
      /attempt 1\n[\s\S]*re-ran the failed jobs and their dependents \(attempt 2 of 3\)[\s\S]*integration-db \| failure \| yes \| matched rule 1 .*log matched ECONNRESET/,
    );

    expect(await outcomesOf(stack, run.id)).toEqual([
      { attempt: 1, status: "done", detail: expect.stringContaining("re-ran the failed jobs") },
      {
        attempt: 2,
        status: "done",
        detail: expect.stringContaining("not re-run: 1 of 1 failed jobs are not transient: integration-db"),
      },
    ]);
  });

  const ruleKinds = [
    {
      kind: "runner lost",
      rules: "  rules:\n    - runner_lost: true\n",
      transient: { runnerLost: true, step: "Test" },
      real: { step: "Test" },
    },
    {
      kind: "job and step globs",
      rules: '  rules:\n    - jobs: ["integration-*"]\n      steps: ["Install*"]\n',
      transient: { step: "Install deps" },
      real: { step: "Test" },
    },
    {
      kind: "conclusions",
      rules: "  rules:\n    - conclusions: [timed_out]\n",
      transient: { conclusion: "timed_out" as const },
      real: { conclusion: "failure" as const },
    },
    {
      kind: "log regex",
      rules: '  rules:\n    - log: ["/lost communication with the server/i"]\n',
      transient: { log: "Lost communication with the server. Verify the machine is running" },
      real: { log: "Error: lost the race" },
    },
  ];

  it.each(ruleKinds)(
    "rule kind $kind: re-runs a matching failure and not a different one",
    async ({ rules, transient, real }) => {
      const { actions } = stack.hub.domains;
      const a = newRepo(stack, rerunPolicyYaml("", rules));
      const matching = startCi(stack, a.repo);
      actions.scriptAttempt(matching.id, 2, "success");
      actions.failJob({ runId: matching.id, job: "integration-db", ...transient });
      const b = newRepo(stack, rerunPolicyYaml("", rules));
      const other = startCi(stack, b.repo);
      actions.failJob({ runId: other.id, job: "integration-db", ...real });
      await settle(stack);

      expect(rerunPosts(stack, a.repo)).toEqual(["rerun-failed-jobs 201"]);
      expect(matching.attempts.at(-1)!.conclusion).toBe("success");
      expect(rerunPosts(stack, b.repo)).toEqual([]);
      expect(rerunChecks(stack, other.head_sha)[0]!.output.summary).toContain("no rule matched");
    },
  );

  it("accepts read_ahead in existing policies; the run's decision reads the failed job's log itself", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  read_ahead: true\n"));
    const { actions } = stack.hub.domains;
    const run = actions.startRun({ owner: ORG, repo, workflow: "CI", jobs: JOBS });
    actions.failJob({
      runId: run.id,
      job: "integration-db",
      step: "Install deps",
      log: "npm ERR! network read ECONNRESET",
    });
    await settle(stack);
    // Nothing is read when the job ends: the run has not completed.
    expect(requestsFor(stack, repo).filter((r) => /\/actions\/jobs\/\d+\/logs$/.test(r.path))).toHaveLength(0);
    actions.completeJob({ runId: run.id, job: "lint" });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
    expect(
      requestsFor(stack, repo)
        .filter((r) => /\/actions\/jobs\/\d+\/logs$/.test(r.path))
        .map((r) => r.status),
    ).toEqual([302]);
    expect(await outcomesOf(stack, run.id)).toEqual([
      { attempt: 1, status: "done", detail: expect.stringContaining("re-ran the failed jobs") },
    ]);
    expect(rerunChecks(stack, run.head_sha)[0]!.output.summary).toMatch(
      /integration-db \| failure \| yes \| matched rule 1 .*log matched ECONNRESET/,
    );
  });
});
