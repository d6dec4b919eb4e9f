// `after` in the sandbox hub: a production deployment waits while the same sha is still deploying
// to staging, and is approved when the staging deployment's status turns to success.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

// Room for the world's waits (w.until, up to 60 s each) on a loaded machine.
describe("after: staging", { timeout: 180_000 }, () => {
  it("waits on a staging deployment under way and answers once staging succeeded (deployment_status or check completion re-evaluates)", async () => {
    w.pushPolicy(`deployments:
  environments:
    production:
      after: [staging]
`);
    w.environment("production", { rule: true });
    const run = w.startDeploy({
      jobs: [
        { name: "staging", environment: "staging" },
        { name: "production", environment: "production" },
      ],
    });
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    expect(w.effects("protection_rule.status_report")[0]!.detail.comment).toMatch(
      /the deployment of [0-9a-f]{7} to staging has not finished/,
    );
    expect(w.effects("protection_rule.approved")).toEqual([]);

    w.completeJob(run, "staging");
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the approval");
    expect(w.effects("protection_rule.approved")[0]!.detail.comment).toMatch(/[0-9a-f]{7} deployed to staging first/);
    const statuses = w.stack.hub.control.deliveries().filter((d) => d.event === "deployment_status");
    expect(statuses.length).toBeGreaterThan(0);
  });
});
