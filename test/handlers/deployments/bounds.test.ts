// Calendars a repository writes cannot hold the process, and a rule that cannot be evaluated never
// approves: iteration starts near the decision, every rule spends from one bounded budget, and a
// rule past a bound holds the deployment with a reason naming it.
import ICAL from "ical.js";
import { describe, expect, it } from "vitest";
import { evaluate } from "../../../handlers/deployments/decide.js";
import type { DeploymentsPolicy, EnvironmentRule } from "../../../handlers/deployments/policy.js";
import { createDeploymentsHandler } from "../../../handlers/deployments/index.js";
import { ical } from "../../../handlers/deployments/libraries.js";
import { calendarPeriods, parseCalendar, recurrencePeriods } from "../../../handlers/deployments/recurrence.js";
import { analysePolicyText } from "../../../src/policy/validate.js";

const NOW = new Date("2026-12-02T10:15:00Z");
const policyOf = (rule: EnvironmentRule): DeploymentsPolicy => ({ environments: { production: rule } });
const request = { environment: "production", ref: "refs/heads/main", sha: "a".repeat(40), requestedAt: NOW };
const decide = (rule: EnvironmentRule, facts: Partial<Parameters<typeof evaluate>[2]> = {}, now = NOW) =>
  evaluate(policyOf(rule), { ...request, requestedAt: now }, { checkRuns: [], deployedTo: {}, ...facts }, now);
const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

/** Ten hourly windows from 2000 in Paris, five minutes each at :00, :05, ... :45. */
const TEN_HOURLY = Array.from({ length: 10 }, (_, i) => ({
  rrule: "FREQ=HOURLY",
  start: `2000-01-01T00:${String(i * 5).padStart(2, "0")}`,
  duration: "5m",
  timezone: "Europe/Paris",
}));

describe("calendar rules far from their start", () => {
  it("a freeze of every day since 1970 freezes today (it used to run out of occurrences and approve)", () => {
    const result = decide({ freeze: [{ rrule: "FREQ=DAILY", start: "1970-01-01T00:00", duration: "24h" }] });
    expect(result.decision).toBe("reject");
    expect(result.reasons[0]).toBe("deploy freeze until 2026-12-03 00:00 UTC; no deploy window opens within a year");
    // The same as the rule starting this year.
    expect(decide({ freeze: [{ rrule: "FREQ=DAILY", start: "2026-01-01T00:00", duration: "24h" }] }).reasons).toEqual(
      result.reasons,
    );
  });

  it("ten hourly windows from 2000 open and close on the minute today", () => {
    // 11:15 Paris is inside the :15 window; 11:52 Paris is outside every one, the next opens at 12:00.
    expect(decide({ windows: TEN_HOURLY })).toMatchObject({
      decision: "approve",
      reasons: ["inside deploy window rrule FREQ=HOURLY from 00:15 for 5m Europe/Paris"],
    });
    const outside = decide({ windows: TEN_HOURLY }, {}, new Date("2026-12-02T10:52:00Z"));
    expect(outside.decision).toBe("wait");
    expect(outside.waitUntil?.toISOString()).toBe("2026-12-02T11:00:00.000Z");
  });

  it("keeps months that have a 31st and weekdays across the jump", () => {
    const from = at("2026-10-01T00:00:00Z");
    const to = at("2027-02-01T00:00:00Z");
    const monthly = recurrencePeriods({ rrule: "FREQ=MONTHLY", start: "1970-01-31T10:00", duration: "1h" }, from, to);
    expect(monthly.map((p) => iso(p.start).slice(0, 10))).toEqual(["2026-10-31", "2026-12-31", "2027-01-31"]);
    const old = recurrencePeriods(
      {
        rrule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH",
        start: "1999-01-05T10:00",
        duration: "2h",
        timezone: "Europe/Paris",
      },
      from,
      to,
    );
    const recent = recurrencePeriods(
      {
        rrule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH",
        start: "2026-09-22T10:00",
        duration: "2h",
        timezone: "Europe/Paris",
      },
      from,
      to,
    );
    expect(old.length).toBeGreaterThan(10);
    expect(old).toEqual(recent);
  });
});

describe("rules past a bound hold, naming the rule", () => {
  it("a rule whose parts never meet returns (it used to loop forever) and holds", () => {
    // A loop that never ends fails this test by its timeout.
    const result = decide({
      freeze: [{ rrule: "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", start: "2026-01-01T00:00", duration: "1h" }],
    });
    expect(result.decision).toBe("wait");
    expect(result.reasons[0]).toMatch(
      /^freeze rrule FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30 from 00:00 for 1h UTC cannot be evaluated \(/,
    );
    expect(result.recheckOn).toEqual({ checks: [], environments: [] });
  });

  it("an impossible yearly window is not walked to the year 20000", () => {
    const result = decide({
      windows: [{ rrule: "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;BYDAY=MO", start: "1970-01-01T00:00", duration: "1h" }],
    });
    expect(result.decision).toBe("wait");
    expect(result.reasons[0]).toContain(
      "window rrule FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;BYDAY=MO from 00:00 for 1h UTC cannot be evaluated",
    );
  });

  it("bounds its own iterator and leaves ical.js as shipped for anything else in the process", () => {
    decide({
      windows: [{ rrule: "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;BYDAY=MO", start: "1970-01-01T00:00", duration: "1h" }],
    });
    // A hosted app iterating with ical.js gets the library's own methods, not Steward's budgeted ones,
    // from the one instance in the process (Steward loads it on first use, as `import` resolves it).
    expect(ical()).toBe(ICAL);
    const proto = ICAL.RecurIterator.prototype;
    for (const method of [proto.expand_year_days, proto.check_contracting_rules]) {
      expect(String(method)).not.toMatch(/spend|budget|original/i);
    }
    const rule = ICAL.Recur.fromString("FREQ=WEEKLY;BYDAY=FR");
    const iter = rule.iterator(ICAL.Time.fromDateTimeString("2026-12-04T16:00:00"));
    expect([iter.next()?.toString(), iter.next()?.toString()]).toEqual(["2026-12-04T16:00:00", "2026-12-11T16:00:00"]);
  });

  it("a COUNT rule that cannot be jumped to today holds (it used to approve)", () => {
    const result = decide({
      freeze: [{ rrule: "FREQ=HOURLY;COUNT=1000000", start: "1970-01-01T00:00", duration: "1h" }],
    });
    expect(result.decision).toBe("wait");
    expect(result.reasons[0]).toMatch(
      /^freeze rrule FREQ=HOURLY;COUNT=1000000 from 00:00 for 1h UTC cannot be evaluated \(it needs more than 20000 steps/,
    );
  });

  it("a dense freeze known only weeks ahead holds and looks again at its horizon, never approves", () => {
    const result = decide({ freeze: [{ rrule: "FREQ=HOURLY", start: "2000-01-01T00:00", duration: "1h" }] });
    expect(result.decision).toBe("wait");
    expect(result.reasons[0]).toMatch(
      /^deploy freeze until 2026-12-02 11:00 UTC; no deploy window opens before 2026-12-2\d \d\d:00 UTC, as far as Steward expands these rules/,
    );
    expect(result.waitUntil!.getTime()).toBeGreaterThan(NOW.getTime() + 14 * 86_400_000);
  });
});

const ics = (...events: string[][]) =>
  [
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    "PRODID:-//acme//t//EN",
    ...events.flatMap((e) => ["BEGIN:VEVENT", ...e, "END:VEVENT"]),
    "END:VCALENDAR",
    "",
  ].join("\r\n");

describe("iCalendar feeds", () => {
  it("counts RDATE holidays and skips EXDATE and moved occurrences (RDATE used to be ignored)", () => {
    const text = ics(
      ["UID:h@acme", "DTSTART;VALUE=DATE:20261207", "RDATE;VALUE=DATE:20261214,20261221", "SUMMARY:Holiday"],
      [
        "UID:w@acme",
        "DTSTART:19900105T090000Z",
        "DTEND:19900105T100000Z",
        "RRULE:FREQ=WEEKLY",
        "EXDATE:20261211T090000Z",
        "SUMMARY:Weekly",
      ],
      [
        "UID:w@acme",
        "RECURRENCE-ID:20261218T090000Z",
        "DTSTART:20261218T150000Z",
        "DTEND:20261218T160000Z",
        "SUMMARY:Weekly moved",
      ],
    );
    const cal = parseCalendar(text);
    if ("error" in cal) throw new Error(cal.error);
    const periods = calendarPeriods(cal, at("2026-12-02T00:00:00Z"), at("2026-12-26T00:00:00Z"), "UTC");
    expect(periods.map((p) => `${p.label} ${iso(p.start)}`)).toEqual([
      "Weekly 2026-12-04T09:00:00.000Z",
      "Holiday 2026-12-07T00:00:00.000Z",
      "Holiday 2026-12-14T00:00:00.000Z",
      "Weekly moved 2026-12-18T15:00:00.000Z",
      "Holiday 2026-12-21T00:00:00.000Z",
      "Weekly 2026-12-25T09:00:00.000Z",
    ]);
  });

  it("a calendar event recurring more often than hourly makes the calendar unusable (it used to be dropped)", () => {
    const text = ics([
      "UID:m@acme",
      "DTSTART:20260101T000000Z",
      "DTEND:20260101T000100Z",
      "RRULE:FREQ=MINUTELY",
      "SUMMARY:Always",
    ]);
    const result = decide(
      { freeze: [{ calendar: ".github/steward/busy.ics" }] },
      { calendars: { ".github/steward/busy.ics": { text } } },
    );
    expect(result).toMatchObject({
      decision: "wait",
      reasons: [
        'calendar .github/steward/busy.ics cannot be used (event "Always" recurs MINUTELY, more often than hourly)',
      ],
    });
  });
});

describe("validation bounds the program", () => {
  const analyse = (text: string) =>
    analysePolicyText(text, {
      file: "acme/web:.github/steward.yml",
      handlers: [createDeploymentsHandler()],
    }).problems.map((p) => `${p.line}:${p.column} ${p.severity}: ${p.message}`);

  it("refuses too many rules and too long rrules at FILE:LINE:COL, and warns about rules that cannot be evaluated", () => {
    const windows = Array.from(
      { length: 17 },
      (_, i) =>
        `        - { rrule: "FREQ=DAILY", start: "2026-01-01T${String(i).padStart(2, "0")}:00", duration: 30m }`,
    ).join("\n");
    expect(analyse(`deployments:\n  environments:\n    production:\n      windows:\n${windows}\n`)).toEqual([
      "21:11 error: at most 16 recurring or calendar windows and freezes per environment; this one lists 17",
    ]);
    const long = `FREQ=DAILY;BYHOUR=${Array.from({ length: 24 }, (_, i) => i).join(",")};BYMINUTE=${Array.from({ length: 60 }, (_, i) => i).join(",")}`;
    expect(
      analyse(
        `deployments:\n  environments:\n    production:\n      freeze:\n        - { rrule: "${long}", start: "2026-01-01T00:00", duration: 1h }\n`,
      ),
    ).toEqual([`5:20 error: rrule is ${long.length} characters long; at most 256 are allowed`]);
    expect(
      analyse(
        `deployments:\n  environments:\n    production:\n      freeze:\n        - { rrule: "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", start: "2026-01-01T00:00", duration: 1h }\n`,
      ),
    ).toEqual([
      expect.stringMatching(
        /^5:20 warning: rrule "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30" cannot be evaluated within Steward's bounds \(.*\): deployments it guards are held$/,
      ),
    ]);
  });

  it("warns about a COUNT rule that every decision would walk from long ago", () => {
    expect(
      analyse(
        `deployments:\n  environments:\n    production:\n      freeze:\n        - { rrule: "FREQ=MONTHLY;COUNT=1000", start: "1990-01-01T00:00", duration: 1h }\n`,
      ),
    ).toEqual([
      "5:20 warning: rrule with COUNT starts more than a year ago: COUNT counts from the start, so every decision walks the rule from there (use UNTIL, or a later start)",
    ]);
  });
});
