// The flake pattern end to end: green, red, green commits of one branch in the sandbox hub; Steward
// re-runs the red commit's job, explains it on that commit and records it for `steward flakes`.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import {
  JOBS,
  ORG,
  newRepo,
  outcomesOf,
  requestsFor,
  rerunChecks,
  rerunPolicyYaml,
  rerunRequestLog,
  settle,
  startRerunStack,
  stewardCli,
  stewardOf,
} from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());
afterEach(() => vi.restoreAllMocks());

const jobRerunPosts = (repo: string) => rerunRequestLog(stack, repo, true);

/** A run on the branch tip after a fresh commit; `fail` names the jobs that fail with a real-looking error. */
function commitAndRun(repo: string, sha: () => string, fail: string[] = []) {
  sha();
  const { actions } = stack.hub.domains;
  const run = actions.startRun({ owner: ORG, repo, workflow: "CI", jobs: JOBS });
  return {
    run,
    finish() {
      for (const j of JOBS) {
        if (fail.includes(j.name))
          actions.failJob({ runId: run.id, job: j.name, step: "Set up job", log: "AssertionError: expected 200" });
        else actions.completeJob({ runId: run.id, job: j.name });
      }
    },
  };
}

const cli = (...args: string[]) => stewardCli(stack, "flakes", ...args);

describe("rerun.flake_pattern", () => {
  it("re-runs a job that failed between two green commits, when the third commit passes", async () => {
    const { repo, sha } = newRepo(stack, rerunPolicyYaml("  flake_pattern: true\n"));
    const a = commitAndRun(repo, sha);
    a.finish();
    await settle(stack);
    const b = commitAndRun(repo, sha, ["integration-db"]);
    stack.hub.domains.actions.scriptAttempt(b.run.id, 2, "success");
    b.finish();
    await settle(stack);
    // B is the tip and its failure matches no rule: not re-run, and no flake yet (no C).
    expect(jobRerunPosts(repo)).toEqual([]);
    const c = commitAndRun(repo, sha);
    c.finish();
    await settle(stack);

    expect(jobRerunPosts(repo)).toEqual([`run ${b.run.id} job integration-db 201`]);
    expect(b.run.attempts.map((x) => `${x.n}:${x.mode}:${x.conclusion}`)).toEqual([
      "1:initial:failure",
      "2:job:success",
    ]);
    const [flakeCheck] = rerunChecks(stack, b.run.head_sha);
    // A flake, not a rule's transient failure; and no other failed job was judged, so none "stays failed".
    expect(flakeCheck!.output.title).toBe("Re-ran CI attempt 1: flake (failed between passing commits)");
    const summary = flakeCheck!.output.summary!;
    expect(summary).toContain("**Action:** re-ran job integration-db and its dependents alone (attempt 2 of");
    expect(summary).not.toContain("stay failed");
    expect(summary).toContain(
      `flake pattern: job integration-db failed on ${b.run.head_sha.slice(0, 7)} but passed on ${a.run.head_sha.slice(0, 7)} before it and ${c.run.head_sha.slice(0, 7)} after it on branch main`,
    );
    expect(summary).toContain("re-ran job integration-db and its dependents alone");
    expect((await outcomesOf(stack, c.run.id))[0]).toMatchObject({
      status: "done",
      detail: expect.stringContaining("flake pattern: job integration-db"),
    });

    // Recorded once, however often the history is looked at again.
    const d = commitAndRun(repo, sha);
    d.finish();
    await settle(stack);
    expect(jobRerunPosts(repo)).toHaveLength(1);

    const listed = await cli("--repo", `${ORG}/${repo}`, "--since", "7d");
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(
      new RegExp(
        `flakiest jobs of ${ORG}/${repo} in the last 7d:\\nFLAKES +RE-RUN +WORKFLOW / JOB +LAST SEEN +COMMIT\\n1 +1 +CI / integration-db +\\S+ +${b.run.head_sha.slice(0, 7)}\\n$`,
      ),
    );
  });

  it("finds the flake when the red commit's run finishes last (its branch already moved on)", async () => {
    const { repo, sha } = newRepo(stack, rerunPolicyYaml("  flake_pattern: true\n"));
    const a = commitAndRun(repo, sha);
    const b = commitAndRun(repo, sha, ["lint"]);
    const c = commitAndRun(repo, sha);
    stack.hub.domains.actions.scriptAttempt(b.run.id, 2, "success");
    a.finish();
    c.finish();
    await settle(stack);
    b.finish();
    await settle(stack);

    expect(jobRerunPosts(repo)).toEqual([`run ${b.run.id} job lint 201`]);
    const outs = await outcomesOf(stack, b.run.id);
    expect(outs[0]).toMatchObject({
      attempt: 1,
      status: "done",
      detail: expect.stringMatching(/flake pattern: job lint .*: re-ran it; superseded: branch main is now at/),
    });
  });

  it("does not look without flake_pattern, and a red-red-green history is no flake", async () => {
    const off = newRepo(stack, rerunPolicyYaml(""));
    for (const fail of [[], ["lint"], []]) {
      commitAndRun(off.repo, off.sha, fail).finish();
      await settle(stack);
    }
    expect(jobRerunPosts(off.repo)).toEqual([]);
    expect(requestsFor(stack, off.repo).some((r) => r.path.includes("/actions/workflows/"))).toBe(false);

    const on = newRepo(stack, rerunPolicyYaml("  flake_pattern: true\n"));
    for (const fail of [["lint"], ["lint"], []]) {
      commitAndRun(on.repo, on.sha, fail).finish();
      await settle(stack);
    }
    expect(jobRerunPosts(on.repo)).toEqual([]);
    expect(await stewardOf(stack).store.kv.list(`rerun:flakes:${ORG}/${on.repo}:`)).toEqual([]);
  });

  it("records a flake the daily budget does not let it re-run, and says so", async () => {
    const { repo, sha } = newRepo(stack, rerunPolicyYaml("  flake_pattern: true\n  daily_budget: 0\n"));
    const a = commitAndRun(repo, sha);
    a.finish();
    const b = commitAndRun(repo, sha, ["lint"]);
    b.finish();
    const c = commitAndRun(repo, sha);
    c.finish();
    await settle(stack);

    expect(jobRerunPosts(repo)).toEqual([]);
    expect(rerunChecks(stack, b.run.head_sha)[0]!.output.summary).toContain(
      "budget: the repository's daily budget of 0 re-runs is spent",
    );
    expect(rerunChecks(stack, b.run.head_sha)[0]!.output.title).toBe("Did not re-run CI attempt 1: daily budget spent");
    const listed = await cli("--repo", `${ORG}/${repo}`);
    expect(listed.out).toMatch(/\n1 +0 +CI \/ lint /);
  });

  it("steward flakes refuses bad input with a usage error", async () => {
    expect(await cli("--since", "7d")).toMatchObject({
      code: 2,
      out: expect.stringContaining("--repo OWNER/NAME is required"),
    });
    expect(await cli("--repo", "acme/x", "--since", "soon")).toMatchObject({
      code: 2,
      out: expect.stringContaining('--since "soon" is not a duration'),
    });
  });
});
