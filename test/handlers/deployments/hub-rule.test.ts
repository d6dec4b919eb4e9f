// The deployments handler as a custom deployment protection rule in the sandbox hub: branches,
// checks, after, the 30-day limit, unlisted environments, redelivery. (Time: hub-time.test.ts.)
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { outcomeOf } from "../../../src/testing.js";
import { createWorld, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

const BUILD_TEST_DEPLOY = [
  { name: "build" },
  { name: "test" },
  { name: "deploy", needs: ["build", "test"], environment: "production" },
];
const CHECKS_POLICY = `deployments:
  environments:
    production:
      branches: [main]
      checks: [build, test]
`;

const decided = () => [...w.effects("protection_rule.approved"), ...w.effects("protection_rule.rejected")];
// Room for the world's waits (w.until, up to 60 s each) on a loaded machine.
describe("protection rule in the sandbox hub", { timeout: 180_000 }, () => {
  it("approves main with green checks, once, even when the request is delivered again", async () => {
    w.pushPolicy(CHECKS_POLICY);
    w.environment("production", { rule: true });
    const run = w.startDeploy({ jobs: BUILD_TEST_DEPLOY });
    w.completeJob(run, "build");
    w.completeJob(run, "test");
    await w.until(() => w.effects("gate.approved").length > 0, "the gate to open");
    const [approved] = w.effects("protection_rule.approved");
    expect(approved!.by).toMatch(/^installation:/);
    expect(approved!.detail.comment).toMatch(
      /^Steward approved the deployment to production:\n- `main` may deploy to production\n- checks `build`, `test` succeeded on [0-9a-f]{7}$/,
    );

    // The same request again under a new delivery id: no second answer.
    const original = w.stack.hub.control.deliveries().find((d) => d.event === "deployment_protection_rule")!;
    const again = (await w.stack.hub.hub.deliver("deployment_protection_rule", original.payload, {
      installationId: original.installation_id!,
    }))!;
    expect(again.guid).not.toBe(original.guid);
    expect(await outcomeOf(w, again.guid, "deployments")).toMatchObject({
      status: "skipped",
      detail: `production of run ${run} was already answered`,
    });
    expect(decided()).toHaveLength(1);
    expect(
      w.stack.hub.control
        .requests()
        .filter((r) => r.method === "POST" && r.path.endsWith("/deployment_protection_rule")),
    ).toHaveLength(1);
  });

  it("rejects a deployment from a feature branch, and one whose check failed", async () => {
    w.pushPolicy(CHECKS_POLICY);
    w.environment("production", { rule: true });
    const feature = w.startDeploy({ branch: "feature/login", jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the feature branch answer");
    expect(w.effects("protection_rule.rejected")[0]!.detail).toMatchObject({
      run_id: feature,
      comment: expect.stringContaining("`feature/login` may not deploy to production (allowed: `main`)"),
    });

    const red = w.startDeploy({
      jobs: [{ name: "build" }, { name: "test" }, { name: "deploy", needs: ["build"], environment: "production" }],
    });
    w.completeJob(red, "test", "failure");
    w.completeJob(red, "build");
    await w.until(() => decided().length === 2, "the failed check answer");
    expect(w.effects("protection_rule.rejected")[1]!.detail).toMatchObject({
      run_id: red,
      comment: expect.stringMatching(/check `test` failed on [0-9a-f]{7}/),
    });
    expect(w.effects("gate.rejected")).toHaveLength(2);
  });

  it("waits for a running check with a status comment, and approves when the check completes", async () => {
    w.pushPolicy(CHECKS_POLICY);
    w.environment("production", { rule: true });
    const run = w.startDeploy({
      jobs: [{ name: "build" }, { name: "test" }, { name: "deploy", needs: ["build"], environment: "production" }],
    });
    w.completeJob(run, "build");
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    expect(w.effects("protection_rule.status_report")[0]!.detail.comment).toMatch(
      /^Steward is holding the deployment to production \(it is rejected at .* UTC if still waiting\):\n- check `test` is (still running|queued) on [0-9a-f]{7}$/,
    );
    expect(decided()).toEqual([]);

    w.completeJob(run, "test");
    await w.until(() => w.effects("gate.approved").length > 0, "the gate to open");
    expect(w.effects("protection_rule.status_report")).toHaveLength(1);
    expect(w.effects("protection_rule.approved")).toHaveLength(1);
  });

  it("evaluates a wait again only when a check it waits on finishes, not on the commit's other checks", async () => {
    w.pushPolicy("deployments:\n  environments:\n    production:\n      checks: [test]\n");
    w.environment("production", { rule: true });
    const run = w.startDeploy({
      jobs: [
        { name: "build" },
        { name: "lint" },
        { name: "test" },
        { name: "deploy", needs: ["build"], environment: "production" },
      ],
    });
    w.completeJob(run, "build");
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    await w.settle();
    const checkReads = () =>
      w.stack.hub.control.requests().filter((r) => r.method === "GET" && /\/commits\/[^/]+\/check-runs$/.test(r.path))
        .length;
    const before = checkReads();

    // lint is not what the wait is on: its check run finishing reads nothing and answers nothing.
    w.completeJob(run, "lint");
    await w.settle();
    expect(checkReads()).toBe(before);
    expect(decided()).toEqual([]);

    w.completeJob(run, "test");
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the gate to open on test");
    expect(checkReads()).toBeGreaterThan(before);
  });

  it("needs the same sha deployed to staging first", async () => {
    w.pushPolicy(`deployments:
  environments:
    production:
      after: [staging]
`);
    w.environment("production", { rule: true });
    const skipped = w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the answer without staging");
    expect(w.effects("protection_rule.rejected")[0]!.detail).toMatchObject({
      run_id: skipped,
      comment: expect.stringMatching(/[0-9a-f]{7} has not been deployed to staging/),
    });

    const promoted = w.startDeploy({
      jobs: [
        { name: "staging", environment: "staging" },
        { name: "production", needs: ["staging"], environment: "production" },
      ],
    });
    w.completeJob(promoted, "staging");
    await w.until(() => decided().length === 2, "the answer after staging");
    expect(w.effects("protection_rule.approved")[0]!.detail).toMatchObject({
      run_id: promoted,
      comment: expect.stringMatching(/[0-9a-f]{7} deployed to staging first/),
    });
  });

  it("rejects at once when the wait would outlast GitHub's 30 days, and leaves unlisted environments alone", async () => {
    const now = w.stack.hub.control.now().getTime();
    w.pushPolicy(`deployments:
  environments:
    production:
      freeze:
        - { from: "${new Date(now - 86_400_000).toISOString()}", to: "${new Date(now + 40 * 86_400_000).toISOString()}", reason: migration }
`);
    w.environment("production", { rule: true });
    w.environment("qa", { rule: true });
    w.startDeploy({
      jobs: [
        { name: "deploy", environment: "production" },
        { name: "qa", environment: "qa" },
      ],
    });
    await w.until(() => decided().length === 1, "the answer");
    expect(w.effects("protection_rule.rejected")[0]!.detail.comment).toContain(
      "would pass the 30 days after which GitHub abandons the deployment",
    );
    const [qaRequest] = await w.stack.hub.control.waitForDeliveries(
      (d) => d.event === "deployment_protection_rule" && (d.payload as { environment?: string }).environment === "qa",
      { timeoutMs: 60_000 },
    );
    expect(await outcomeOf(w, qaRequest!.guid, "deployments")).toMatchObject({
      status: "skipped",
      detail: "no deployments policy matches environment qa",
    });
    // qa has no entry: Steward does not answer, GitHub's own rules decide.
    expect(decided().filter((e) => e.detail.environment === "qa")).toEqual([]);
    expect(w.effects("protection_rule.status_report").filter((e) => e.detail.environment === "qa")).toEqual([]);
  });
});
