// Through the running service in the sandbox hub: a repository's calendar, however heavy, neither
// holds the event loop (`/healthz` and a signed delivery answered within bounds while it is decided)
// nor approves on a rule it could not evaluate; and `branches:` judges the deployed commit, not
// the name the run carries.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, ORG, REPO, type World } from "./world.js";
import {
  watchResponsiveness,
  type Responsiveness,
  HEALTH_BOUND_MS,
  PING_BOUND_MS,
} from "../../support/responsiveness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

function watch(w: World): Responsiveness {
  const base = w.steward.url.replace(/\/$/, "");
  return watchResponsiveness(base, `${base}${w.stack.config.webhookPath}`, w.stack.config.webhookSecrets[0]!);
}

const hourlyWindows = (n: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      `        - { rrule: "FREQ=HOURLY", start: "2000-01-01T00:${String(i * 5).padStart(2, "0")}", duration: 5m, timezone: Europe/Paris }`,
  ).join("\n");
/** Rules the recurrence library searches hardest: parts that never meet (it looped forever on them). */
const NEVER = [
  `        - { rrule: "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", start: "1970-01-01T00:00", duration: 1h }`,
  `        - { rrule: "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;BYDAY=MO", start: "1970-01-01T00:00", duration: 1h }`,
  `        - { rrule: "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=31", start: "1970-01-01T00:00", duration: 1h, reason: never }`,
].join("\n");

const decided = () => [...w.effects("protection_rule.approved"), ...w.effects("protection_rule.rejected")];

describe("heavy calendars through the service", { timeout: 120_000 }, () => {
  it("decides ten hourly windows from 2000 rightly and holds on rules that never meet, while /healthz and deliveries answer", async () => {
    // 11:16 in Paris: inside the window at :15.
    w.setClock(new Date("2026-12-02T10:16:00Z"));
    w.pushPolicy(`deployments:
  environments:
    production:
      windows:
${hourlyWindows(10)}
    staging:
      windows:
${hourlyWindows(10)}
      freeze:
${NEVER}
`);
    w.environment("production", { rule: true });
    w.environment("staging", { rule: true });
    const watcher = watch(w);
    let result: Awaited<ReturnType<typeof watcher.stop>>;
    try {
      for (let i = 0; i < 3; i++) {
        w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
        w.startDeploy({ jobs: [{ name: "deploy", environment: "staging" }] });
      }
      await w.until(
        () =>
          w.effects("protection_rule.approved").length === 3 && w.effects("protection_rule.status_report").length === 3,
        "every deployment decided",
        60_000,
      );
    } finally {
      result = await watcher.stop();
    }
    for (const approved of w.effects("protection_rule.approved")) {
      expect(approved.detail.comment).toContain(
        "inside deploy window rrule FREQ=HOURLY from 00:15 for 5m Europe/Paris",
      );
    }
    // The rules that never meet hold staging, named; nothing approves or rejects it.
    for (const held of w.effects("protection_rule.status_report")) {
      expect(held.detail.comment).toContain(
        "freeze rrule FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30 from 00:00 for 1h UTC cannot be evaluated",
      );
    }
    expect(w.effects("protection_rule.rejected")).toEqual([]);
    expect(result.failures).toEqual([]);
    expect(result.health.length).toBeGreaterThan(3);
    expect(Math.max(...result.health)).toBeLessThan(HEALTH_BOUND_MS);
    expect(Math.max(...result.pings)).toBeLessThan(PING_BOUND_MS);
  });
});

describe("branches: the commit, not the name", { timeout: 180_000 }, () => {
  it("rejects a side-branch commit run under the name main, saying the branch check failed; approves one reachable from main", async () => {
    const older = w.pushPolicy("deployments:\n  environments:\n    production:\n      branches: [main]\n");
    w.stack.hub.control.pushFiles({ owner: ORG, repo: REPO, files: { "b.txt": "more\n" }, message: "main moves on" });
    const side = w.stack.hub.control.pushFiles({
      owner: ORG,
      repo: REPO,
      branch: "side",
      from: "main",
      files: { "c.txt": "side\n" },
      message: "side only",
    }).sha;
    w.environment("production", { rule: true });

    // What a tag named `main` on the side branch produces: a run whose head branch is `main` at that commit.
    const named = w.startDeploy({ branch: "main", sha: side, jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the answer for the side commit");
    expect(w.effects("protection_rule.rejected")[0]!.detail).toMatchObject({
      run_id: named,
      comment: expect.stringContaining(
        `branch check failed: ${side.slice(0, 7)} is not on branch \`main\` (neither its tip nor reachable from it: ahead); only commits on \`main\` may deploy to production`,
      ),
    });

    // An earlier commit of main is on main.
    const earlier = w.startDeploy({
      branch: "main",
      sha: older,
      jobs: [{ name: "deploy", environment: "production" }],
    });
    await w.until(() => decided().length === 2, "the answer for the earlier commit");
    expect(w.effects("protection_rule.approved")[0]!.detail).toMatchObject({
      run_id: earlier,
      comment: expect.stringContaining("`main` may deploy to production"),
    });
  });
});
