// `report_every` counts from when a held deployment's status was sent, not from the decision made
// before it; an approval after a freeze was checked says what was checked.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { WaitRecord } from "../../../handlers/deployments/waits.js";
import { createWorld, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld({ stewardClock: true });
});
afterEach(async () => {
  await w.close();
});

describe("report_every", { timeout: 180_000 }, () => {
  it("counts from when the status was sent", async () => {
    // Frozen for the next hour: held, with a status report.
    const until = new Date(w.stack.hub.control.now().getTime() + 3_600_000).toISOString();
    w.pushPolicy(`deployments:
  environments:
    production:
      report_every: 2m
      freeze:
        - from: "2000-01-01T00:00:00Z"
          to: "${until}"
          reason: release freeze
`);
    w.environment("production", { rule: true });
    // Latency is added before the hub runs the route: the status is recorded (effect) that much later.
    w.stack.hub.control.setFault("POST /repos/*/*/actions/runs/*/deployment_protection_rule", {
      latencyMs: 1_500,
      times: 1,
    });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    const reports = () => w.effects("protection_rule.status_report");
    await w.until(() => reports().length > 0, "the first status report");
    const sentAt = Date.parse(reports()[0]!.at);
    const [wait] = (await w.steward.store.kv.list<WaitRecord>("deployments:wait:")).map((e) => e.value);
    expect(wait?.lastReportAt).toBeDefined();
    // Before, it was the decision's time, 1.5 s before the hub even took the status.
    expect(Date.parse(wait!.lastReportAt!)).toBeGreaterThanOrEqual(sentAt);
  });

  it("an approval after a freeze was checked says so, not that the policy sets no conditions", async () => {
    // A freeze that ended yesterday: checked, not in effect.
    const ended = new Date(w.stack.hub.control.now().getTime() - 86_400_000).toISOString();
    w.pushPolicy(`deployments:
  environments:
    production:
      freeze:
        - from: "2000-01-01T00:00:00Z"
          to: "${ended}"
          reason: release freeze
`);
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the approval");
    const comment = w.effects("protection_rule.approved")[0]!.detail.comment as string;
    expect(comment).toContain("no deploy freeze in effect (1 freeze entry checked)");
    expect(comment).not.toContain("sets no conditions");
  });
});
