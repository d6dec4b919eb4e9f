// Deploy windows across time zones and DST transitions.
import { describe, expect, it } from "vitest";
import {
  describeWindow,
  formatInstant,
  nextOpening,
  nextWindowStart,
  parseHours,
  windowOpen,
} from "../../../handlers/deployments/calendar.js";

const at = (iso: string) => new Date(iso).getTime();
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
const parisWeekdays = {
  days: ["mon", "tue", "wed", "thu", "fri"],
  hours: "09:00-17:00",
  timezone: "Europe/Paris",
} as const;

describe("deploy windows", () => {
  it("opens and closes on the zone's wall clock", () => {
    expect(windowOpen(parisWeekdays, at("2026-11-23T08:00:00Z"))).toBe(true); // 09:00 CET
    expect(windowOpen(parisWeekdays, at("2026-11-23T07:59:59Z"))).toBe(false);
    expect(windowOpen(parisWeekdays, at("2026-11-23T16:00:00Z"))).toBe(false); // 17:00 CET, end exclusive
    expect(windowOpen(parisWeekdays, at("2026-11-21T10:00:00Z"))).toBe(false); // Saturday
  });

  it("follows Paris into summer time: the same 09:00 is an hour earlier in UTC", () => {
    // Friday 2026-03-27 18:00 CET; clocks go forward on Sunday 2026-03-29.
    expect(iso(nextWindowStart(parisWeekdays, at("2026-03-27T17:00:00Z")))).toBe("2026-03-30T07:00:00.000Z");
    expect(formatInstant(at("2026-03-30T07:00:00Z"), "Europe/Paris")).toBe("2026-03-30 09:00 CEST");
  });

  it("moves a window start inside the spring-forward gap to the end of the gap", () => {
    const w = { days: ["sun"], hours: "02:30-04:00", timezone: "Europe/Paris" } as const;
    // 02:30 does not exist on 2026-03-29 in Paris; the window starts at 03:30 CEST (01:30 UTC).
    expect(iso(nextWindowStart(w, at("2026-03-28T12:00:00Z")))).toBe("2026-03-29T01:30:00.000Z");
    expect(windowOpen(w, at("2026-03-29T01:00:00Z"))).toBe(false); // 03:00 CEST
    expect(windowOpen(w, at("2026-03-29T01:45:00Z"))).toBe(true);
  });

  it("keeps a window across the autumn fall-back hour open for its whole wall-clock span", () => {
    const w = { days: ["sun"], hours: "01:00-03:00", timezone: "Europe/Paris" } as const;
    // 2026-10-25: 01:00 CEST = 23:00Z (Sat), 02:00-03:00 happens twice, 03:00 CET = 02:00Z.
    expect(windowOpen(w, at("2026-10-24T22:59:00Z"))).toBe(false);
    expect(windowOpen(w, at("2026-10-24T23:00:00Z"))).toBe(true);
    expect(windowOpen(w, at("2026-10-25T01:30:00Z"))).toBe(true); // second 02:30
    expect(windowOpen(w, at("2026-10-25T02:00:00Z"))).toBe(false);
  });

  it("handles New York's DST change on its own date", () => {
    const w = { days: ["mon"], hours: "09:00-10:00", timezone: "America/New_York" } as const;
    // 2026-03-08 clocks go forward in the US (Paris waits until 03-29).
    expect(iso(nextWindowStart(w, at("2026-03-03T00:00:00Z")))).toBe("2026-03-09T13:00:00.000Z");
    expect(iso(nextWindowStart(w, at("2026-03-01T00:00:00Z")))).toBe("2026-03-02T14:00:00.000Z");
  });

  it("runs to midnight with 24:00 and opens at the next matching day", () => {
    const w = { days: ["sat", "sun"], hours: "20:00-24:00", timezone: "Asia/Tokyo" } as const;
    expect(windowOpen(w, at("2026-11-21T14:59:00Z"))).toBe(true); // Sat 23:59 JST
    expect(windowOpen(w, at("2026-11-21T15:00:00Z"))).toBe(false); // Sun 00:00 JST
    expect(iso(nextWindowStart(w, at("2026-11-21T15:00:00Z")))).toBe("2026-11-22T11:00:00.000Z");
  });

  it("finds the first window after every freeze", () => {
    const freezes = [
      { from: "2026-11-23T00:00:00Z", to: "2026-11-24T12:00:00Z" },
      { from: "2026-11-25T00:00:00Z", to: "2026-11-26T00:00:00Z" },
    ];
    // Saturday -> Monday frozen -> Tuesday 12:00Z is 13:00 CET inside the window.
    expect(iso(nextOpening([parisWeekdays], freezes, at("2026-11-21T15:00:00Z")))).toBe("2026-11-24T12:00:00.000Z");
    // Tuesday 17:00 CET -> Wednesday frozen -> Thursday 09:00 CET.
    expect(iso(nextOpening([parisWeekdays], freezes, at("2026-11-24T16:30:00Z")))).toBe("2026-11-26T08:00:00.000Z");
    expect(iso(nextOpening([], freezes, at("2026-11-25T03:00:00Z")))).toBe("2026-11-26T00:00:00.000Z");
    expect(iso(nextOpening([], [], at("2026-11-25T03:00:00Z")))).toBe("2026-11-25T03:00:00.000Z");
  });

  it("describes windows the way people write them", () => {
    expect(describeWindow(parisWeekdays)).toBe("Mon-Fri 09:00-17:00 Europe/Paris");
    expect(describeWindow({ days: ["mon", "wed", "fri", "sat", "sun"] })).toBe("Mon, Wed, Fri-Sun all day UTC");
    expect(describeWindow({ hours: "10:00-11:00" })).toBe("every day 10:00-11:00 UTC");
  });

  it("rejects malformed and inverted hours", () => {
    expect(parseHours("09:00-17:00")).toEqual({ start: 540, end: 1020 });
    expect(parseHours("9-17")).toHaveProperty("error");
    expect(parseHours("17:00-09:00")).toHaveProperty("error");
    expect(parseHours("09:00-24:30")).toHaveProperty("error");
    expect(parseHours("25:00-26:00")).toHaveProperty("error");
  });
});
