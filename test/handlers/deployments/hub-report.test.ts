// Report-only mode for deployments through the sandbox hub: the gate is decided as it would be,
// the answer that would have been given is recorded and shown (a comment-only status for a
// protection rule), and nothing is approved or rejected. Switching the rule to act answers.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

const JOBS = [{ name: "build" }, { name: "deploy", needs: ["build"], environment: "production" }];
const policy = (mode: string) => `deployments:
  environments:
    production:
      branches: [main]
      mode: ${mode}
`;

const decided = () => [...w.effects("protection_rule.approved"), ...w.effects("protection_rule.rejected")];
const answers = () =>
  w.stack.hub.control.requests().filter((r) => r.method === "POST" && r.path.endsWith("/deployment_protection_rule"));

async function reportedAnswers() {
  const log = await w.steward.store.kv.auditLog({ kind: "deployment_answer" });
  return log.map((e) => e.details as Record<string, unknown>);
}

describe("deployments in report mode", { timeout: 180_000 }, () => {
  it("a rule in report mode says it would have approved and approves nothing", async () => {
    w.pushPolicy(policy("report"));
    w.environment("production", { rule: true });
    const run = w.startDeploy({ jobs: JOBS });
    w.completeJob(run, "build");
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "the report-only status");
    await w.settle();

    expect(decided()).toEqual([]);
    expect(w.effects("gate.approved")).toEqual([]);
    const [status] = w.effects("protection_rule.status_report");
    expect(status!.detail.comment).toMatch(
      /^Report only \(deployments\.environments\.production\.mode: report\), nothing was approved or rejected\. Steward would have approved the deployment to production:\n- `main` may deploy to production/,
    );
    // The only write is that comment-only status: no state was sent.
    expect(answers()).toHaveLength(1);
    const [recorded] = await reportedAnswers();
    expect(recorded).toMatchObject({
      environment: "production",
      state: "approved",
      reportOnly: "deployments.environments.production.mode: report",
      would: "would have approved",
    });
  });

  it("would have rejected a branch the rule does not allow; the section's mode covers its rules", async () => {
    w.pushPolicy("deployments:\n  mode: report\n  environments:\n    production:\n      branches: [release]\n");
    w.environment("production", { rule: true });
    const run = w.startDeploy({ jobs: JOBS });
    w.completeJob(run, "build");
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "the report-only status");
    await w.settle();
    expect(decided()).toEqual([]);
    const [status] = w.effects("protection_rule.status_report");
    expect(status!.detail.comment).toContain(
      "Report only (deployments.mode: report), nothing was approved or rejected. Steward would have rejected the deployment to production:",
    );
    expect((await reportedAnswers())[0]).toMatchObject({ state: "rejected", would: "would have rejected" });
  });

  it("switching the rule to act is the only change: the next deployment is approved", async () => {
    w.pushPolicy(policy("report"));
    w.environment("production", { rule: true });
    const first = w.startDeploy({ jobs: JOBS });
    w.completeJob(first, "build");
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "the report-only status");
    expect(decided()).toEqual([]);

    w.pushPolicy(policy("act"));
    await w.settle();
    const second = w.startDeploy({ jobs: JOBS });
    w.completeJob(second, "build");
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the approval");
    const [approved] = w.effects("protection_rule.approved");
    expect(approved!.detail.comment).toMatch(/^Steward approved the deployment to production:/);
    expect(decided()).toHaveLength(1);
  });
});
