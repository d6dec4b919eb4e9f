// Calendars in the sandbox hub: a recurring (RRULE) window and a holiday calendar read from the
// admin repository hold a deployment, report until when, and approve it by the scheduled task
// when the period ends, with no new event. The decision clock is the hub's (moved by its control).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DateTime } from "luxon";
import { reportDue } from "../../../handlers/deployments/execute.js";
import type { WaitRecord } from "../../../handlers/deployments/waits.js";
import { createWorld, ORG, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

/** Lead time before a period ends: long enough for Steward to hold first even on a loaded machine. */
const LEAD_MS = 5000;
const ics = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");

// Room for the world's waits (w.until, up to 60 s each) on a loaded machine.
describe("calendars in the sandbox hub", { timeout: 180_000 }, () => {
  it("holds until a daily RRULE window opens in Paris, then approves by the scheduled task", async () => {
    // The hub's clock put at 09:59:55 Paris time on a winter Tuesday; the window is daily 10:00 for 2h.
    w.setClock(
      DateTime.fromISO("2026-11-24T10:00:00", { zone: "Europe/Paris" }).minus({ milliseconds: LEAD_MS }).toJSDate(),
    );
    w.pushPolicy(`deployments:
  environments:
    production:
      report_every: 30m
      windows:
        - rrule: "FREQ=DAILY"
          start: "2026-01-01T10:00"
          duration: 2h
          timezone: Europe/Paris
`);
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    const report = w.effects("protection_rule.status_report")[0]!.detail.comment as string;
    expect(report).toContain("Steward is holding the deployment to production until 2026-11-24 09:00 UTC");
    expect(report).toContain(
      "outside deploy window rrule FREQ=DAILY from 10:00 for 2h Europe/Paris; next window opens 2026-11-24 10:00 CET",
    );
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the window to open", 30_000);
    expect(w.effects("protection_rule.approved")[0]!.detail.comment).toContain(
      "inside deploy window rrule FREQ=DAILY from 10:00 for 2h Europe/Paris",
    );
    expect(w.effects("protection_rule.status_report")).toHaveLength(1);
  });

  it("freezes on an event of the admin repository's holiday calendar and approves when it ends", async () => {
    const now = w.stack.hub.control.now();
    const end = new Date(Math.ceil((now.getTime() + LEAD_MS) / 1000) * 1000);
    const calendar = [
      "BEGIN:VCALENDAR",
      "VERSION:2.0",
      "PRODID:-//acme//holidays//EN",
      "BEGIN:VEVENT",
      "UID:offsite@acme",
      `DTSTART:${ics(new Date(now.getTime() - 3_600_000))}`,
      `DTEND:${ics(end)}`,
      "SUMMARY:Company offsite",
      "END:VEVENT",
      "END:VCALENDAR",
      "",
    ].join("\r\n");
    w.stack.hub.control.pushFiles({
      owner: ORG,
      repo: ".github",
      files: { ".github/steward/holidays.ics": calendar },
      message: "holidays",
    });
    w.pushPolicy(`deployments:
  environments:
    production:
      freeze:
        - calendar: .github/steward/holidays.ics
          reason: holiday
`);
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    expect(w.effects("protection_rule.status_report")[0]!.detail.comment).toContain("(holiday: Company offsite)");
    await w.until(() => w.effects("protection_rule.approved").length > 0, "the holiday to end", 30_000);
    expect(w.stack.hub.control.now().getTime()).toBeGreaterThanOrEqual(end.getTime());
  });

  it("holds, rather than guesses, while the named calendar does not exist", async () => {
    w.pushPolicy(`deployments:
  environments:
    production:
      freeze:
        - calendar: .github/steward/missing.ics
`);
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("protection_rule.status_report").length > 0, "a status report");
    expect(w.effects("protection_rule.status_report")[0]!.detail.comment).toContain(
      `calendar .github/steward/missing.ics cannot be used (${ORG}/.github:.github/steward/missing.ics does not exist)`,
    );
    expect(w.effects("protection_rule.approved")).toEqual([]);
  });
});

describe("report_every", () => {
  const record = (comment: string, at: string): WaitRecord => ({
    gate: { path: "rule", owner: ORG, repo: "web", runId: 1, environment: "production", installationId: 1 },
    sha: "a".repeat(40),
    ref: "main",
    requestedAt: at,
    lastComment: comment,
    lastReportAt: at,
  });
  const t = (iso: string) => Date.parse(iso);

  it("reports at most once per period, even when the text changed, and again once the period passed", () => {
    const last = record("held: check build running", "2026-11-24T09:00:00Z");
    expect(reportDue("held: check build running", undefined, 30 * 60_000, t("2026-11-24T09:00:00Z"))).toBe(true);
    expect(reportDue("held: window", last, 30 * 60_000, t("2026-11-24T09:29:59Z"))).toBe(false);
    expect(reportDue("held: check build running", last, 30 * 60_000, t("2026-11-24T09:30:00Z"))).toBe(true);
  });

  it("without it, reports whenever the text changes and only then", () => {
    const last = record("held: window", "2026-11-24T09:00:00Z");
    expect(reportDue("held: window", last, undefined, t("2026-11-25T09:00:00Z"))).toBe(false);
    expect(reportDue("held: freeze", last, undefined, t("2026-11-24T09:00:01Z"))).toBe(true);
  });
});
