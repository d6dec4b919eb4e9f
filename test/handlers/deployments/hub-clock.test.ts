// Steward runs by the sandbox hub's clock: the deployments handler as shipped decides by `ctx.now()`,
// and moving the hub's clock (its control API) moves Steward's waiting tasks with it. A deployment held
// until a window opens gets its status report at most every `report_every` saying until when, and is
// approved once the clock is moved past the opening, with no new event and no waiting.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld({ stewardClock: true });
});
afterEach(async () => {
  await w.close();
});

const MINUTE = 60_000;
const utc = (d: Date) => `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;

// Room for the world's waits (w.until, up to 60 s each) on a loaded machine.
describe("moving the hub's clock", { timeout: 180_000 }, () => {
  it("reports at most every report_every until the window opens, then approves by the re-check the move brought forward", async () => {
    const { control } = w.stack.hub;
    // A daily window opening 6 to 7 minutes from now on the hub's clock (moves stay within the app
    // JWT's ten minutes, which Steward signs by its host's clock).
    const opens = new Date(Math.ceil((control.now().getTime() + 6 * MINUTE) / MINUTE) * MINUTE);
    w.pushPolicy(`deployments:
  environments:
    production:
      report_every: 2m
      windows:
        - rrule: "FREQ=DAILY"
          start: "2026-01-01T${opens.toISOString().slice(11, 16)}"
          duration: 2h
          timezone: UTC
`);
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    const reports = () => w.effects("protection_rule.status_report").map((e) => e.detail.comment as string);
    await w.until(() => reports().length > 0, "the first status report");
    expect(reports()[0]).toContain(`Steward is holding the deployment to production until ${utc(opens)}`);
    const protectionRequests = () =>
      control.deliveries().filter((d) => d.event === "deployment_protection_rule").length;
    expect(protectionRequests()).toBe(1);

    // One minute on: less than report_every, so no report, and the window is still closed.
    control.advanceClock(MINUTE);
    await w.settle();
    await w.settle();
    expect(reports()).toHaveLength(1);
    expect(w.effects("protection_rule.approved")).toEqual([]);

    // Past report_every: the re-check due at the next report is brought forward and reports, until when.
    control.advanceClock(MINUTE + 10_000);
    await w.until(() => reports().length === 2, "the second status report");
    expect(reports()[1]).toContain(`until ${utc(opens)}`);
    expect(w.effects("protection_rule.approved")).toEqual([]);

    // Past the opening: approved by the scheduled re-check, not by any new event.
    control.advanceClock(opens.getTime() - control.now().getTime() + 5_000);
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the window to open");
    expect(w.effects("protection_rule.approved")[0]!.detail.comment).toContain("inside deploy window rrule FREQ=DAILY");
    expect(reports()).toHaveLength(2);
    expect(protectionRequests()).toBe(1);
    expect(w.effects("gate.approved")).toHaveLength(1);
  });

  it("moves a waiting task with the clock, forward and back, and runs it once the clock passes it", async () => {
    const { control } = w.stack.hub;
    const steward = w.steward;
    const later = new Date(Date.now() + 30 * MINUTE);
    await steward.engine
      .schedulerFor("deployments")
      .schedule({ key: "clock-probe", runAt: later, data: { waitKey: "deployments:wait:none" } });
    control.advanceClock(10 * MINUTE);
    await w.settle();
    const probe = async () => (await steward.store.tasks.listTasks()).find((t) => t.key === "clock-probe");
    // The task follows the clock in the background: wait for it (expect.poll alone gives up after 1 s).
    await expect
      .poll(async () => (await probe())?.runAt.getTime(), { timeout: 30_000 })
      .toBe(later.getTime() - 10 * MINUTE);
    control.advanceClock(-5 * MINUTE);
    await expect
      .poll(async () => (await probe())?.runAt.getTime(), { timeout: 30_000 })
      .toBe(later.getTime() - 5 * MINUTE);
    // Moved past it: it runs (the wait it names is gone, so it is skipped) and leaves the queue.
    control.advanceClock(30 * MINUTE);
    await expect.poll(async () => (await probe()) === undefined, { timeout: 30_000 }).toBe(true);
    control.advanceClock(-35 * MINUTE);
  });
});
