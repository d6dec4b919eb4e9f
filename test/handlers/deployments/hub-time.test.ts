// Time in the sandbox hub: a deploy window in Paris summer time opening by the scheduled task,
// a freeze ending, and a wait resumed after a restart with the clock moved on meanwhile.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

// Room for the world's waits (w.until, up to 120 s) on a loaded machine.
describe("deploy windows and freezes in the sandbox hub", { timeout: 240_000 }, () => {
  it("holds a deployment until the window opens in Paris summer time, by its scheduled task", async () => {
    w.pushPolicy(`deployments:
  environments:
    production:
      windows:
        - days: [mon, tue, wed, thu, fri]
          hours: "09:00-17:00"
          timezone: Europe/Paris
`);
    w.environment("production", { rule: true });
    // Monday after the switch to summer time, 08:59:58 CEST: the window opens two seconds later.
    // The clock stands still until the first decision (the hold) is seen, however slow the machine.
    const before = new Date("2026-03-30T06:59:58Z");
    w.stopClock(before);
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    expect(w.effects("protection_rule.status_report")[0]!.detail.comment).toContain(
      "outside deploy window Mon-Fri 09:00-17:00 Europe/Paris; next window opens 2026-03-30 09:00 CEST",
    );
    w.setClock(before);
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the window to open", 120_000);
    expect(w.effects("protection_rule.approved")[0]!.detail.comment).toContain(
      "inside deploy window Mon-Fri 09:00-17:00 Europe/Paris",
    );
  });

  it("answers a deployment requested during a freeze when the freeze ends", async () => {
    const now = w.stack.hub.control.now();
    // Two seconds away; the clock stands still until the first decision (the hold) is seen,
    // however slow the machine.
    const end = new Date(Math.ceil((now.getTime() + 2_000) / 1000) * 1000);
    w.stopClock(now);
    w.pushPolicy(`deployments:
  environments:
    production:
      freeze:
        - from: ${new Date(now.getTime() - 3_600_000).toISOString()}
          to: ${end.toISOString()}
          reason: release candidate soak
`);
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    expect(w.effects("protection_rule.status_report")[0]!.detail.comment).toContain("(release candidate soak)");
    w.setClock(now);
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the freeze to end", 120_000);
    expect(w.now().getTime()).toBeGreaterThanOrEqual(end.getTime());
  });

  it("resumes a wait after a restart, with the clock moved on while Steward was down", async () => {
    w.pushPolicy(`deployments:
  environments:
    production:
      windows:
        - { days: [mon, tue, wed, thu, fri], hours: "09:00-17:00", timezone: Europe/Paris }
`);
    w.environment("production", { rule: true });
    w.setClock(new Date("2026-11-21T15:00:00Z")); // Saturday
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    expect(w.effects("protection_rule.status_report")[0]!.detail.comment).toContain(
      "next window opens 2026-11-23 09:00 CET",
    );

    await w.restart(() => w.setClock(new Date("2026-11-23T09:30:00Z")));
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the restarted Steward to answer");
    expect(w.effects("gate.approved")).toHaveLength(1);
  });
});
