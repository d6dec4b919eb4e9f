// Report-only mode for re-runs, end to end through the sandbox hub: the decision is made and
// recorded as it would be, `steward/rerun` says what would have been re-run, and no re-run is
// requested. Switching the policy's key to act is the only change needed for the next failure.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import rerun from "../../../handlers/rerun/index.js";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { actingWrites } from "../../support/acting-writes.js";
import {
  ORG,
  newRepo,
  outcomesOf,
  rerunChecks,
  rerunPolicyYaml,
  rerunPosts,
  settle,
  startCi,
  startRerunStack,
  stewardCli,
  stewardOf,
} from "./stack.js";

const TRANSIENT = { job: "integration-db", step: "Install deps", log: "npm ERR! network read ECONNRESET" };

async function decisionsOf(stack: SandboxStack, runId: number) {
  const log = await stewardOf(stack).store.kv.auditLog({ kind: "rerun_decision" });
  return log.filter((e) => (e.details as { runId?: number }).runId === runId).map((e) => e.details);
}

describe("rerun in report mode (policy)", () => {
  let stack: SandboxStack;
  beforeAll(async () => void (stack = await startRerunStack()));
  afterAll(() => stack?.close());

  it("rerun.mode: report decides, records and reports the re-run, and requests none", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  max_attempts: 3\n  mode: report\n"));
    const run = startCi(stack, repo);
    stack.hub.domains.actions.failJob({ runId: run.id, ...TRANSIENT });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(actingWrites(stack, `/repos/${ORG}/${repo}/`)).toEqual([]);
    expect(run.attempts).toHaveLength(1);

    const [check] = rerunChecks(stack, run.head_sha);
    expect(check!.conclusion).toBe("neutral");
    expect(check!.output.title).toBe("Would have re-run CI attempt 1: transient failure (report only)");
    expect(check!.output.summary).toContain(
      "**Action:** would have re-run the failed jobs and their dependents (attempt 2 of 3); nothing was re-run: report only, by rerun.mode: report.",
    );
    expect(check!.output.summary).toMatch(/integration-db \| failure \| yes \| matched rule 1/);

    expect(await outcomesOf(stack, run.id)).toEqual([
      { attempt: 1, status: "done", detail: expect.stringContaining("would have re-run the failed jobs") },
    ]);
    // Recorded exactly as an acting decision is, with the mode beside it.
    const [decision] = await decisionsOf(stack, run.id);
    expect(decision).toMatchObject({ decision: "rerun", mode: "failed_jobs", reportOnly: "rerun.mode: report" });

    // `steward simulate` counts the decision as a re-run and says the policy only reports.
    const dir = await mkdtemp(join(tmpdir(), "steward-report-"));
    try {
      const file = join(dir, "steward.yml");
      await writeFile(file, rerunPolicyYaml("  max_attempts: 3\n  mode: report\n"));
      const { code, out } = await stewardCli(stack, "simulate", "--policy", file, "--repo", `${ORG}/${repo}`);
      expect(code).toBe(0);
      expect(out).toContain(
        "the last 1 failed runs would have been re-run 1 time (was 1) (rerun.mode: report: reported in steward/rerun, none requested)",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a rule in report mode keeps its re-runs reported; the same rule set to act re-runs the next failure", async () => {
    const policy = (mode: string) =>
      rerunPolicyYaml(
        "  max_attempts: 3\n",
        `  rules:\n    - jobs: ["integration-*"]\n      log: [ECONNRESET]\n      mode: ${mode}\n    - runner_lost: true\n`,
      );
    const { repo } = newRepo(stack, policy("report"));
    const first = startCi(stack, repo);
    stack.hub.domains.actions.failJob({ runId: first.id, ...TRANSIENT });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(actingWrites(stack, `/repos/${ORG}/${repo}/actions`)).toEqual([]);
    const [check] = rerunChecks(stack, first.head_sha);
    expect(check!.output.title).toBe("Would have re-run CI attempt 1: transient failure (report only)");
    expect(check!.output.summary).toContain(
      "report only, by rerun.rules[0].mode: report (rule 1, matched by integration-db)",
    );

    // The switch: only the rule's mode changes.
    stack.hub.control.pushFiles({ owner: ORG, repo, files: { ".github/steward.yml": policy("act") } });
    await settle(stack);
    const second = startCi(stack, repo);
    stack.hub.domains.actions.failJob({ runId: second.id, ...TRANSIENT });
    await settle(stack);

    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
    const [acted] = rerunChecks(stack, second.head_sha);
    expect(acted!.output.title).toBe("Re-ran CI attempt 1: transient failure");
    expect((await decisionsOf(stack, second.id))[0]).not.toHaveProperty("reportOnly");
  });

  it("a give-up reads the same in report mode (it writes nothing either way)", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  mode: report\n"));
    const run = startCi(stack, repo);
    stack.hub.domains.actions.failJob({ runId: run.id, job: "integration-db", step: "Test", log: "AssertionError" });
    await settle(stack);
    expect(actingWrites(stack, `/repos/${ORG}/${repo}/`)).toEqual([]);
    const [check] = rerunChecks(stack, run.head_sha);
    expect(check!.output.title).toBe("Did not re-run CI attempt 1");
  });
});

describe("rerun in report mode (operator)", () => {
  let stack: SandboxStack;
  beforeAll(
    async () => void (stack = await startSandboxStack({ handlers: [rerun], env: { STEWARD_REPORT_ONLY: "rerun" } })),
  );
  afterAll(() => stack?.close());

  it("STEWARD_REPORT_ONLY=rerun reports over a policy that acts", async () => {
    const { repo } = newRepo(stack, rerunPolicyYaml("  mode: workflow\n"));
    const run = startCi(stack, repo);
    stack.hub.domains.actions.failJob({ runId: run.id, ...TRANSIENT });
    await settle(stack);

    expect(actingWrites(stack, `/repos/${ORG}/${repo}/`)).toEqual([]);
    const [check] = rerunChecks(stack, run.head_sha);
    expect(check!.output.summary).toContain(
      "would have re-run the whole workflow (attempt 2 of 2); nothing was re-run: report only, by STEWARD_REPORT_ONLY names rerun.",
    );
    expect((await decisionsOf(stack, run.id))[0]).toMatchObject({
      decision: "rerun",
      mode: "workflow",
      reportOnly: "STEWARD_REPORT_ONLY names rerun",
    });
  });
});
