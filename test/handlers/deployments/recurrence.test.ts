// Calendars: RFC 5545 recurrence rules and iCalendar files turned into periods, with zones and DST,
// and what the decision makes of them.
import { describe, expect, it } from "vitest";
import {
  calendarPeriods,
  parseCalendar,
  parseDuration,
  recurrencePeriods,
} from "../../../handlers/deployments/recurrence.js";
import { buildTimetable } from "../../../handlers/deployments/timetable.js";
import { evaluate } from "../../../handlers/deployments/decide.js";
import type { DeploymentsPolicy } from "../../../handlers/deployments/policy.js";

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

export const HOLIDAYS = [
  "BEGIN:VCALENDAR",
  "VERSION:2.0",
  "PRODID:-//acme//holidays//EN",
  "X-WR-TIMEZONE:Europe/Paris",
  "BEGIN:VEVENT",
  "UID:xmas@acme",
  "DTSTART;VALUE=DATE:20261225",
  "DTEND;VALUE=DATE:20261227",
  "SUMMARY:Christmas",
  "END:VEVENT",
  "BEGIN:VEVENT",
  "UID:bastille@acme",
  "DTSTART;VALUE=DATE:20260714",
  "RRULE:FREQ=YEARLY",
  "SUMMARY:Bastille Day",
  "END:VEVENT",
  "BEGIN:VEVENT",
  "UID:townhall@acme",
  "DTSTART;TZID=America/New_York:20261201T090000",
  "DTEND;TZID=America/New_York:20261201T110000",
  "SUMMARY:Town hall",
  "END:VEVENT",
  "END:VCALENDAR",
  "",
].join("\r\n");

describe("recurrence rules", () => {
  it("keeps a weekly wall-clock time across the switch to summer time", () => {
    const periods = recurrencePeriods(
      { rrule: "FREQ=WEEKLY;BYDAY=FR", start: "2026-03-20T16:00", duration: "2h", timezone: "Europe/Paris" },
      at("2026-03-19T00:00:00Z"),
      at("2026-04-04T00:00:00Z"),
    );
    expect(periods.map((p) => [iso(p.start), iso(p.end)])).toEqual([
      ["2026-03-20T15:00:00.000Z", "2026-03-20T17:00:00.000Z"], // CET
      ["2026-03-27T15:00:00.000Z", "2026-03-27T17:00:00.000Z"],
      ["2026-04-03T14:00:00.000Z", "2026-04-03T16:00:00.000Z"], // CEST
    ]);
  });

  it("reads RRULE: prefixes, BYSETPOS and UNTIL", () => {
    // The last Friday of each month, through June.
    const periods = recurrencePeriods(
      {
        rrule: "RRULE:FREQ=MONTHLY;BYDAY=FR;BYSETPOS=-1;UNTIL=20260630T000000Z",
        start: "2026-01-30T00:00",
        duration: "1d",
      },
      at("2026-01-01T00:00:00Z"),
      at("2027-01-01T00:00:00Z"),
    );
    expect(periods.map((p) => iso(p.start).slice(0, 10))).toEqual([
      "2026-01-30",
      "2026-02-27",
      "2026-03-27",
      "2026-04-24",
      "2026-05-29",
      "2026-06-26",
    ]);
  });

  it("parses durations and refuses nonsense", () => {
    expect(parseDuration("30m")).toEqual({ ms: 1_800_000 });
    expect(parseDuration("2h30m")).toEqual({ ms: 9_000_000 });
    expect(parseDuration("PT8H")).toEqual({ ms: 28_800_000 });
    expect(parseDuration("1d")).toEqual({ ms: 86_400_000 });
    expect("error" in parseDuration("soon")).toBe(true);
    expect("error" in parseDuration("0m")).toBe(true);
  });
});

describe("iCalendar files", () => {
  it("turns all-day holidays into whole days on the calendar's wall clock, and zoned events into their zone", () => {
    const cal = parseCalendar(HOLIDAYS);
    if ("error" in cal) throw new Error(cal.error);
    const periods = calendarPeriods(cal, at("2026-07-01T00:00:00Z"), at("2027-08-01T00:00:00Z"));
    expect(periods.map((p) => [p.label, iso(p.start), iso(p.end)])).toEqual([
      ["Bastille Day", "2026-07-13T22:00:00.000Z", "2026-07-14T22:00:00.000Z"],
      ["Town hall", "2026-12-01T14:00:00.000Z", "2026-12-01T16:00:00.000Z"],
      ["Christmas", "2026-12-24T23:00:00.000Z", "2026-12-26T23:00:00.000Z"],
      ["Bastille Day", "2027-07-13T22:00:00.000Z", "2027-07-14T22:00:00.000Z"],
    ]);
    // The policy's zone wins over the file's for all-day events.
    const utc = calendarPeriods(cal, at("2026-12-20T00:00:00Z"), at("2026-12-31T00:00:00Z"), "UTC");
    expect(utc.map((p) => iso(p.start))).toEqual(["2026-12-25T00:00:00.000Z"]);
  });

  it("refuses what is not a calendar, with the reason", () => {
    expect(parseCalendar("hello")).toEqual({ error: expect.stringMatching(/^it is not an iCalendar file/) });
    expect(parseCalendar("x".repeat(600 * 1024))).toEqual({ error: "it is larger than 512 KB" });
  });
});

describe("decisions on calendars", () => {
  const policy: DeploymentsPolicy = {
    environments: {
      production: {
        windows: [
          { rrule: "FREQ=WEEKLY;BYDAY=TU,TH", start: "2026-01-06T10:00", duration: "4h", timezone: "Europe/Paris" },
        ],
        freeze: [{ calendar: ".github/steward/holidays.ics", reason: "holiday" }],
      },
    },
  };
  const request = (now: string) => ({
    environment: "production",
    ref: "refs/heads/main",
    sha: "a".repeat(40),
    requestedAt: new Date(now),
  });
  const facts = { checkRuns: [], deployedTo: {}, calendars: { ".github/steward/holidays.ics": { text: HOLIDAYS } } };

  it("holds outside the recurring window, saying until when, and approves inside it", () => {
    const monday = evaluate(policy, request("2026-11-23T12:00:00Z"), facts, new Date("2026-11-23T12:00:00Z"));
    expect(monday.decision).toBe("wait");
    expect(monday.waitUntil?.toISOString()).toBe("2026-11-24T09:00:00.000Z");
    expect(monday.reasons[0]).toBe(
      "outside deploy window rrule FREQ=WEEKLY;BYDAY=TU,TH from 10:00 for 4h Europe/Paris; next window opens 2026-11-24 10:00 CET",
    );
    expect(evaluate(policy, request("2026-11-24T09:30:00Z"), facts, new Date("2026-11-24T09:30:00Z")).decision).toBe(
      "approve",
    );
  });

  it("holds on a holiday from the calendar until the next window after it", () => {
    // Thursday 24 December 2026, 12:00 CET is inside the window but Christmas starts that night;
    // Friday 25 is a holiday: the next opening is Tuesday 29 December 10:00.
    const christmas = evaluate(policy, request("2026-12-25T10:00:00Z"), facts, new Date("2026-12-25T10:00:00Z"));
    expect(christmas.decision).toBe("wait");
    expect(christmas.reasons[0]).toContain("deploy freeze until 2026-12-27 00:00 CET (holiday: Christmas)");
    expect(christmas.waitUntil?.toISOString()).toBe("2026-12-29T09:00:00.000Z");
  });

  it("waits and polls, rather than guess, when the calendar cannot be read", () => {
    const missing = evaluate(
      policy,
      request("2026-11-24T09:30:00Z"),
      {
        checkRuns: [],
        deployedTo: {},
        calendars: {
          ".github/steward/holidays.ics": { error: "acme/.github:.github/steward/holidays.ics does not exist" },
        },
      },
      new Date("2026-11-24T09:30:00Z"),
    );
    expect(missing.decision).toBe("wait");
    expect(missing.reasons).toEqual([
      "calendar .github/steward/holidays.ics cannot be used (acme/.github:.github/steward/holidays.ics does not exist)",
    ]);
    expect(missing.recheckOn).toEqual({ checks: [], environments: [] });
  });

  it("builds recurring freezes with their reason", () => {
    const table = buildTimetable(
      {
        freeze: [
          {
            rrule: "FREQ=WEEKLY;BYDAY=FR",
            start: "2026-01-02T15:00",
            duration: "PT65H",
            timezone: "Europe/Paris",
            reason: "weekend",
          },
        ],
      },
      {},
      at("2026-11-23T00:00:00Z"),
    );
    expect(table.problems).toEqual([]);
    const next = table.freezes.find((f) => Date.parse(f.from) > at("2026-11-23T00:00:00Z"))!;
    expect([next.from, next.to, next.reason]).toEqual([
      "2026-11-27T14:00:00.000Z",
      "2026-11-30T07:00:00.000Z",
      "weekend",
    ]);
  });
});
