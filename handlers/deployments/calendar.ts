// Wall-clock arithmetic for deploy windows and freezes. Windows are weekly wall-clock ranges in
// an IANA zone, so every computation goes through luxon to get DST transitions right.
import type { DateTime } from "luxon";
import { luxon } from "./libraries.js";

export const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export type Day = (typeof DAYS)[number];

const DAY_LABEL: Record<Day, string> = {
  mon: "Mon",
  tue: "Tue",
  wed: "Wed",
  thu: "Thu",
  fri: "Fri",
  sat: "Sat",
  sun: "Sun",
};
// Zone abbreviations come from Intl: en-US knows American ones (EST), en-GB European ones (CET).
const ABBREVIATION_LOCALES = ["en-US", "en-GB"];

export interface WindowSpec {
  days?: readonly Day[];
  hours?: string;
  timezone?: string;
  /**
   * Set for windows from a recurrence rule or a calendar, expanded around the decision time:
   * the window is open exactly inside these periods (days and hours are then not used).
   */
  periods?: readonly Period[];
  /** How such a window reads in reasons, e.g. `rrule FREQ=WEEKLY;BYDAY=TU from 10:00 for 2h Europe/Paris`. */
  label?: string;
}

export interface FreezeSpec {
  from: string;
  to: string;
  reason?: string;
  timezone?: string;
  /** `from` and `to` as instants, when already known (periods of rules and calendars). */
  period?: { start: number; end: number };
}

/** A concrete open or frozen period [start, end). */
export interface Period {
  start: number;
  end: number;
  label?: string;
}

export function zoneError(zone: string): string | undefined {
  return luxon().IANAZone.isValidZone(zone) ? undefined : `unknown time zone "${zone}"`;
}

const HOURS = /^(\d{2}):(\d{2})\s*-\s*(\d{2}):(\d{2})$/;

/** `HH:MM-HH:MM` to minutes after midnight; the end may be `24:00` and must come after the start. */
export function parseHours(text: string): { start: number; end: number } | { error: string } {
  const m = HOURS.exec(text.trim());
  if (!m) return { error: `hours "${text}" are not "HH:MM-HH:MM"` };
  const [sh, sm, eh, em] = m.slice(1).map(Number) as [number, number, number, number];
  if (sh > 23 || sm > 59 || em > 59 || eh > 24 || (eh === 24 && em !== 0))
    return { error: `hours "${text}" are not valid times` };
  const start = sh * 60 + sm;
  const end = eh * 60 + em;
  if (end <= start)
    return { error: `hours "${text}" end before they start (split a window that spans midnight in two)` };
  return { start, end };
}

/** An ISO 8601 instant; text without an offset is read in `zone` (default UTC). */
export function parseInstant(text: string, zone?: string): { ms: number } | { error: string } {
  const dt = luxon().DateTime.fromISO(text, { zone: zone ?? "UTC" });
  if (!dt.isValid) return { error: `"${text}" is not an ISO 8601 date or time` };
  return { ms: dt.toMillis() };
}

interface Segment {
  start: number;
  end: number;
}

function minutesToTime(day: DateTime, minutes: number): DateTime {
  if (minutes === 24 * 60) return day.plus({ days: 1 }).startOf("day");
  // Setting a wall-clock time inside a spring-forward gap moves it forward by the gap (luxon's rule).
  return day.set({ hour: Math.floor(minutes / 60), minute: minutes % 60, second: 0, millisecond: 0 });
}

/** The window's open segments on the days around `at` (from the day before to a week after). */
function segmentsAround(window: WindowSpec, at: number): Segment[] {
  const zone = window.timezone ?? "UTC";
  const range = window.hours ? parseHours(window.hours) : { start: 0, end: 24 * 60 };
  if ("error" in range) return [];
  const days = new Set(window.days ?? DAYS);
  const today = luxon().DateTime.fromMillis(at, { zone }).startOf("day");
  const segments: Segment[] = [];
  for (let offset = -1; offset <= 8; offset++) {
    const day = today.plus({ days: offset }).startOf("day");
    if (!days.has(DAYS[day.weekday - 1]!)) continue;
    const start = minutesToTime(day, range.start).toMillis();
    const end = minutesToTime(day, range.end).toMillis();
    if (end > start) segments.push({ start, end });
  }
  return segments;
}

/** Disjoint sorted intervals: `starts[i]` < `ends[i]` <= `starts[i + 1]`. */
interface Union {
  starts: number[];
  ends: number[];
}

function unionOf(periods: readonly { start: number; end: number }[]): Union {
  const sorted = periods.filter((p) => p.end > p.start).sort((a, b) => a.start - b.start);
  const starts: number[] = [];
  const ends: number[] = [];
  for (const p of sorted) {
    const last = ends.length - 1;
    if (last >= 0 && p.start <= ends[last]!) ends[last] = Math.max(ends[last]!, p.end);
    else {
      starts.push(p.start);
      ends.push(p.end);
    }
  }
  return { starts, ends };
}

/** Index of the last interval starting at or before `at`, or -1. */
function lastStartingBy(u: Union, at: number): number {
  let lo = 0;
  let hi = u.starts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (u.starts[mid]! <= at) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** Periods of a window, merged once per window (a decision asks about them many times). */
const unions = new WeakMap<readonly Period[], Union>();
function windowUnion(periods: readonly Period[]): Union {
  let u = unions.get(periods);
  if (!u) unions.set(periods, (u = unionOf(periods)));
  return u;
}

/** True when `at` falls inside the window. */
export function windowOpen(window: WindowSpec, at: number): boolean {
  if (!window.periods) return segmentsAround(window, at).some((s) => s.start <= at && at < s.end);
  const u = windowUnion(window.periods);
  const i = lastStartingBy(u, at);
  return i >= 0 && at < u.ends[i]!;
}

/** The next instant after `at` at which the window opens, or undefined if it never does. */
export function nextWindowStart(window: WindowSpec, at: number): number | undefined {
  if (window.periods) {
    const u = windowUnion(window.periods);
    return u.starts[lastStartingBy(u, at) + 1];
  }
  const starts = segmentsAround(window, at)
    .map((s) => s.start)
    .filter((s) => s > at);
  return starts.length ? Math.min(...starts) : undefined;
}

export interface ActiveFreeze {
  freeze: FreezeSpec;
  from: number;
  to: number;
}

function freezeRange(freeze: FreezeSpec): { start: number; end: number } | undefined {
  if (freeze.period) return freeze.period;
  const from = parseInstant(freeze.from, freeze.timezone);
  const to = parseInstant(freeze.to, freeze.timezone);
  return "error" in from || "error" in to ? undefined : { start: from.ms, end: to.ms };
}

/** The freeze containing `at`, if any (latest end first, so one answer covers back-to-back freezes). */
export function activeFreeze(freezes: readonly FreezeSpec[], at: number): ActiveFreeze | undefined {
  let found: ActiveFreeze | undefined;
  for (const freeze of freezes) {
    const range = freezeRange(freeze);
    if (!range) continue;
    if (range.start <= at && at < range.end && (!found || range.end > found.to))
      found = { freeze, from: range.start, to: range.end };
  }
  return found;
}

/**
 * The earliest instant at or after `at` that is inside a window (or any time when there are no
 * windows) and outside every freeze. Undefined when no such instant exists up to `limit` (a year,
 * or less when the windows and freezes are not known that far).
 */
export function nextOpening(
  windows: readonly WindowSpec[],
  freezes: readonly FreezeSpec[],
  at: number,
  limit = at + 366 * 86_400_000,
): number | undefined {
  const frozen = unionOf(freezes.map(freezeRange).filter((r): r is { start: number; end: number } => r !== undefined));
  let candidate = at;
  while (candidate <= limit) {
    const i = lastStartingBy(frozen, candidate);
    if (i >= 0 && candidate < frozen.ends[i]!) {
      candidate = frozen.ends[i]!;
      continue;
    }
    if (windows.length === 0 || windows.some((w) => windowOpen(w, candidate))) return candidate;
    const starts = windows.map((w) => nextWindowStart(w, candidate)).filter((s): s is number => s !== undefined);
    if (starts.length === 0) return undefined;
    candidate = Math.min(...starts);
  }
  return undefined;
}

function describeDays(days: readonly Day[] | undefined): string {
  const set = new Set(days ?? DAYS);
  if (set.size === DAYS.length) return "every day";
  // Consecutive runs in week order read as ranges: Mon-Fri, Sat, Sun.
  const parts: string[] = [];
  let run: Day[] = [];
  const flush = () => {
    if (run.length === 0) return;
    parts.push(
      run.length > 2 ? `${DAY_LABEL[run[0]!]}-${DAY_LABEL[run.at(-1)!]}` : run.map((d) => DAY_LABEL[d]).join(", "),
    );
    run = [];
  };
  for (const day of DAYS) {
    if (set.has(day)) run.push(day);
    else flush();
  }
  flush();
  return parts.join(", ");
}

/** `Mon-Fri 09:00-17:00 Europe/Paris`. */
export function describeWindow(window: WindowSpec): string {
  if (window.label) return window.label;
  return `${describeDays(window.days)} ${window.hours ?? "all day"} ${window.timezone ?? "UTC"}`;
}

function zoneAbbreviation(dt: DateTime): string {
  let name = "";
  for (const locale of ABBREVIATION_LOCALES) {
    name = dt.setLocale(locale).toFormat("ZZZZ");
    if (!/^GMT[+-]/.test(name)) return name;
  }
  return name;
}

/** `2026-11-23 09:00 CET`: the instant on the wall clock of `zone`, with its abbreviation. */
export function formatInstant(ms: number, zone = "UTC"): string {
  const dt = luxon().DateTime.fromMillis(ms, { zone });
  return `${dt.toFormat("yyyy-MM-dd HH:mm")} ${zoneAbbreviation(dt)}`;
}
