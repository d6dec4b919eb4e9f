// Calendar periods: RFC 5545 recurrence rules and iCalendar files, expanded into concrete
// [start, end) instants over a bounded horizon. ical.js parses and iterates (it knows RFC 5545's
// corner cases); wall-clock times are turned into instants by luxon in an IANA zone, so a rule
// "every Friday 16:00 Europe/Paris" stays at 16:00 across DST. Pure: the .ics text is a fact
// fetched by the handler.
import ICAL from "ical.js";
import { DateTime, Duration } from "luxon";
import type { Period } from "./calendar.js";

/** An expansion never iterates more than this many occurrences (a rule from 2000 by the hour would). */
export const MAX_OCCURRENCES = 20_000;
/** iCalendar files larger than this are refused (holiday calendars are a few kilobytes). */
export const MAX_CALENDAR_BYTES = 512 * 1024;


export interface RecurrenceSpec {
  /** `FREQ=WEEKLY;BYDAY=FR` (an `RRULE:` prefix is allowed). */
  rrule: string;
  /** Wall-clock first occurrence `YYYY-MM-DDTHH:MM` in `timezone`: sets the time of day too. */
  start: string;
  /** `8h`, `30m`, `1d`, `2h30m` or ISO 8601 `PT8H`. */
  duration: string;
  timezone?: string;
}

const SHORT_DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?$/;
/** Sub-hourly rules would expand to thousands of periods a day: windows and freezes are coarser. */
const ALLOWED_FREQ = new Set(["HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"]);

/** `30m` / `8h` / `1d` / `2h30m` / ISO 8601 (`PT8H`) to milliseconds. */
export function parseDuration(text: string): { ms: number } | { error: string } {
  const t = text.trim();
  const short = t.length > 0 && t.length <= 16 ? SHORT_DURATION.exec(t) : null;
  let ms: number | undefined;
  if (short && (short[1] || short[2] || short[3])) {
    ms = ((Number(short[1] ?? 0) * 24 + Number(short[2] ?? 0)) * 60 + Number(short[3] ?? 0)) * 60_000;
  } else if (t.startsWith("P")) {
    const iso = Duration.fromISO(t);
    if (iso.isValid) ms = iso.as("milliseconds");
  }
  if (ms === undefined || !Number.isFinite(ms)) return { error: `duration "${text}" is not like "30m", "8h", "1d" or ISO 8601 "PT8H"` };
  if (ms <= 0) return { error: `duration "${text}" must be longer than zero` };
  return { ms };
}

function ruleText(rrule: string): string {
  return rrule.trim().replace(/^RRULE:/i, "");
}

/** Problems of a recurrence a schema cannot see, or undefined. */
export function recurrenceError(spec: RecurrenceSpec): { key: "rrule" | "start" | "duration"; message: string } | undefined {
  let recur: ICAL.Recur;
  try {
    recur = ICAL.Recur.fromString(ruleText(spec.rrule));
  } catch (error) {
    return { key: "rrule", message: `rrule "${spec.rrule}" is not an RFC 5545 recurrence rule: ${(error as Error).message}` };
  }
  if (!recur.freq) return { key: "rrule", message: `rrule "${spec.rrule}" has no FREQ` };
  if (!ALLOWED_FREQ.has(recur.freq)) return { key: "rrule", message: `rrule FREQ=${recur.freq} is finer than hourly; use HOURLY or coarser` };
  const start = DateTime.fromISO(spec.start, { zone: spec.timezone ?? "UTC" });
  if (!start.isValid) return { key: "start", message: `start "${spec.start}" is not an ISO 8601 date or time` };
  const duration = parseDuration(spec.duration);
  if ("error" in duration) return { key: "duration", message: duration.error };
  return undefined;
}

/** The wall-clock time of `t` read in `zone` (a UTC time stays UTC), as an instant. */
function instantOf(t: ICAL.Time, zone: string): number {
  if (t.zone?.tzid === "UTC") return Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  return DateTime.fromObject({ year: t.year, month: t.month, day: t.day, hour: t.hour, minute: t.minute, second: t.second }, { zone }).toMillis();
}

function floating(dt: DateTime, isDate: boolean): ICAL.Time {
  return ICAL.Time.fromData({ year: dt.year, month: dt.month, day: dt.day, hour: dt.hour, minute: dt.minute, second: dt.second, isDate });
}

/**
 * Occurrences of `first` under `recur` (each lasting `lengthMs`, or to the same wall-clock time
 * `days` later for all-day events) that overlap [from, to). Bounded by MAX_OCCURRENCES.
 */
function expand(recur: ICAL.Recur | undefined, first: ICAL.Time, zone: string, length: { ms: number } | { days: number }, from: number, to: number, label?: string): Period[] {
  const out: Period[] = [];
  const endOf = (t: ICAL.Time, start: number) => {
    if ("ms" in length) return start + length.ms;
    const end = t.clone();
    end.day += length.days;
    return instantOf(end, zone);
  };
  const add = (t: ICAL.Time) => {
    const start = instantOf(t, zone);
    const end = endOf(t, start);
    if (end > from && start < to) out.push({ start, end, ...(label ? { label } : {}) });
    return start;
  };
  if (!recur) {
    add(first);
    return out;
  }
  const it = recur.iterator(first);
  for (let i = 0; i < MAX_OCCURRENCES; i++) {
    const next = it.next();
    if (!next) break;
    if (add(next) >= to) break;
  }
  return out;
}

/** Periods of a recurrence overlapping [from, to). Invalid specs (rejected by validation) yield none. */
export function recurrencePeriods(spec: RecurrenceSpec, from: number, to: number, label?: string): Period[] {
  if (recurrenceError(spec)) return [];
  const zone = spec.timezone ?? "UTC";
  const recur = ICAL.Recur.fromString(ruleText(spec.rrule));
  const start = DateTime.fromISO(spec.start, { zone });
  const duration = parseDuration(spec.duration) as { ms: number };
  return expand(recur, floating(start, false), zone, duration, from, to, label);
}

export interface ParsedCalendar {
  /** One entry per VEVENT: its first start, length and rule, ready to expand. */
  events: { first: ICAL.Time; zone: string | undefined; length: { ms: number } | { days: number }; recur: ICAL.Recur | undefined; label: string | undefined }[];
  /** X-WR-TIMEZONE of the calendar, the zone of its all-day and floating events unless the policy says one. */
  zone: string | undefined;
}

/** Parse an iCalendar file; all-day events (holidays) last whole days on the calendar's wall clock. */
export function parseCalendar(text: string): ParsedCalendar | { error: string } {
  if (Buffer.byteLength(text) > MAX_CALENDAR_BYTES) return { error: `it is larger than ${MAX_CALENDAR_BYTES / 1024} KB` };
  let root: ICAL.Component;
  try {
    root = new ICAL.Component(ICAL.parse(text) as any[]);
  } catch (error) {
    return { error: `it is not an iCalendar file: ${(error as Error).message}` };
  }
  if (root.name !== "vcalendar") return { error: "it has no VCALENDAR" };
  const zone = stringValue(root.getFirstPropertyValue("x-wr-timezone"));
  const events: ParsedCalendar["events"] = [];
  for (const vevent of root.getAllSubcomponents("vevent")) {
    const dtstart = vevent.getFirstProperty("dtstart");
    const first = dtstart?.getFirstValue() as ICAL.Time | undefined;
    if (!first) continue;
    const tzid = stringValue(dtstart!.getParameter("tzid"));
    const dtend = vevent.getFirstPropertyValue("dtend") as ICAL.Time | undefined;
    const durationValue = vevent.getFirstPropertyValue("duration") as ICAL.Duration | undefined;
    let length: { ms: number } | { days: number };
    if (first.isDate) {
      // RFC 5545: an all-day event without DTEND lasts one day.
      const days = dtend ? Math.max(1, dtend.subtractDate(first).toSeconds() / 86_400) : durationValue ? Math.max(1, durationValue.toSeconds() / 86_400) : 1;
      length = { days: Math.round(days) };
    } else {
      const seconds = dtend ? dtend.subtractDateTz(first).toSeconds() : durationValue ? durationValue.toSeconds() : 0;
      length = { ms: Math.max(0, seconds) * 1000 };
    }
    const rrule = vevent.getFirstPropertyValue("rrule") as ICAL.Recur | undefined;
    if (rrule && !ALLOWED_FREQ.has(rrule.freq)) continue;
    events.push({ first, zone: tzid, length, recur: rrule ?? undefined, label: stringValue(vevent.getFirstPropertyValue("summary")) });
  }
  return { events, zone };
}

function stringValue(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** Periods of a parsed calendar overlapping [from, to); `zone` is the policy's, over the file's own. */
export function calendarPeriods(calendar: ParsedCalendar, from: number, to: number, zone?: string): Period[] {
  const out: Period[] = [];
  for (const e of calendar.events) {
    const eventZone = e.zone ?? zone ?? calendar.zone ?? "UTC";
    const floatingFirst = floating(DateTime.fromObject({ year: e.first.year, month: e.first.month, day: e.first.day, hour: e.first.hour, minute: e.first.minute, second: e.first.second }), e.first.isDate);
    const first = e.first.zone?.tzid === "UTC" ? e.first : floatingFirst;
    out.push(...expand(e.recur, first, eventZone, e.length, from, to, e.label));
  }
  return out.sort((a, b) => a.start - b.start);
}
