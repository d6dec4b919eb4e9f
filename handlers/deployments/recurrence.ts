// Calendar periods: RFC 5545 recurrence rules and iCalendar files, expanded into concrete
// [start, end) instants over a bounded horizon. ical.js parses and iterates (it knows RFC 5545's
// corner cases); wall-clock times are turned into instants by luxon in an IANA zone, so a rule
// "every Friday 16:00 Europe/Paris" stays at 16:00 across DST. Pure: the .ics text is a fact
// fetched by the handler.
import type ICAL from "ical.js";
import type { DateTime } from "luxon";
import { ical, luxon } from "./libraries.js";
import type { Period } from "./calendar.js";

/** iCalendar files larger than this are refused (holiday calendars are a few kilobytes). */
export const MAX_CALENDAR_BYTES = 512 * 1024;
/** Longest `rrule` a policy may hold (real rules are a few dozen characters). */
export const MAX_RRULE_LENGTH = 256;
/**
 * Periods kept per rule and decision: an hourly rule covers some three weeks, a daily one the whole
 * horizon. Past the last one kept, the rule is not known and a decision does not look there.
 */
export const MAX_PERIODS_PER_RULE = 500;
/**
 * Steps one decision may spend on calendars: an occurrence examined or kept is one step, a pass of
 * the recurrence library's own search (a candidate day checked against the rule's parts) is
 * LIBRARY_STEP. The bound counts work, never time, so a decision is the same on any machine under
 * any load; at some 20 us a step it holds the event loop well under a second. The heaviest rules a
 * policy may reasonably hold (ten hourly windows from 2000) spend a few thousand.
 */
export const MAX_CALENDAR_STEPS = 20_000;
/** What one pass of the library's search costs, in steps (it is some ten times an occurrence's work). */
const LIBRARY_STEP = 10;

/** A calendar rule whose evaluation went past a bound: the decision holds rather than guess. */
export class CalendarBoundError extends Error {}

/**
 * What one decision may spend expanding calendars, in steps (checked inside the recurrence
 * library's own search loop too, where a rule that never matches would otherwise spin forever).
 */
export class CalendarBudget {
  private steps: number;
  constructor(private readonly maxSteps = MAX_CALENDAR_STEPS) {
    this.steps = maxSteps;
  }
  spend(n = 1): void {
    this.steps -= n;
    if (this.steps < 0) throw new CalendarBoundError(`it needs more than ${this.maxSteps} steps`);
  }
  /** Steps spent so far. */
  spent(): number {
    return this.maxSteps - Math.max(0, this.steps);
  }
}

/** Periods of one rule, known up to `knownUntil` (the horizon asked for, or the last period kept). */
export interface Expansion {
  periods: Period[];
  knownUntil: number;
}

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
    const iso = luxon().Duration.fromISO(t);
    if (iso.isValid) ms = iso.as("milliseconds");
  }
  if (ms === undefined || !Number.isFinite(ms))
    return { error: `duration "${text}" is not like "30m", "8h", "1d" or ISO 8601 "PT8H"` };
  if (ms <= 0) return { error: `duration "${text}" must be longer than zero` };
  return { ms };
}

function ruleText(rrule: string): string {
  return rrule.trim().replace(/^RRULE:/i, "");
}

/** Problems of a recurrence a schema cannot see, or undefined. */
export function recurrenceError(
  spec: RecurrenceSpec,
): { key: "rrule" | "start" | "duration"; message: string } | undefined {
  if (spec.rrule.length > MAX_RRULE_LENGTH)
    return {
      key: "rrule",
      message: `rrule is ${spec.rrule.length} characters long; at most ${MAX_RRULE_LENGTH} are allowed`,
    };
  let recur: ICAL.Recur;
  try {
    recur = ical().Recur.fromString(ruleText(spec.rrule));
  } catch (error) {
    return {
      key: "rrule",
      message: `rrule "${spec.rrule}" is not an RFC 5545 recurrence rule: ${(error as Error).message}`,
    };
  }
  if (!recur.freq) return { key: "rrule", message: `rrule "${spec.rrule}" has no FREQ` };
  if (!ALLOWED_FREQ.has(recur.freq))
    return { key: "rrule", message: `rrule FREQ=${recur.freq} is finer than hourly; use HOURLY or coarser` };
  const start = luxon().DateTime.fromISO(spec.start, { zone: spec.timezone ?? "UTC" });
  if (!start.isValid) return { key: "start", message: `start "${spec.start}" is not an ISO 8601 date or time` };
  const duration = parseDuration(spec.duration);
  if ("error" in duration) return { key: "duration", message: duration.error };
  return undefined;
}

/**
 * What a rule costs near `now`, for validation: a warning when evaluating it goes past a bound
 * (every deployment it guards is held), or when it cannot be jumped to the present
 * (COUNT counts from the start, so each decision walks from there) or never occurs near it.
 */
export function recurrenceCost(
  spec: RecurrenceSpec,
  now: number,
  budget = new CalendarBudget(),
): { severity: "error" | "warning"; message: string } | undefined {
  if (recurrenceError(spec)) return undefined;
  const recur = ical().Recur.fromString(ruleText(spec.rrule));
  try {
    const { periods } = recurrenceExpansion(spec, now, now + 367 * DAY_MS, budget);
    const start = luxon()
      .DateTime.fromISO(spec.start, { zone: spec.timezone ?? "UTC" })
      .toMillis();
    if (recur.count && start < now - 367 * DAY_MS) {
      return {
        severity: "warning",
        message: `rrule with COUNT starts more than a year ago: COUNT counts from the start, so every decision walks the rule from there (use UNTIL, or a later start)`,
      };
    }
    if (periods.length === 0 && start < now + 367 * DAY_MS && !(recur.until || recur.count)) {
      return { severity: "warning", message: `rrule "${spec.rrule}" has no occurrence within a year of now` };
    }
    return undefined;
  } catch (error) {
    // A warning, not an error: an error would drop the whole file (every environment in it); the
    // decision holds on the rule all the same.
    return {
      severity: "warning",
      message: `rrule "${spec.rrule}" cannot be evaluated within Steward's bounds (${(error as Error).message}): deployments it guards are held`,
    };
  }
}

const DAY_MS = 86_400_000;

/**
 * A zone's UTC offset (minutes) over one wall-clock day when it is the same all day, else null
 * (a DST change that day). Asking the zone database is the costly part of expanding a rule:
 * an hourly rule asks once a day. Bounded: cleared when full.
 */
const dayOffsets = new Map<string, number | null>();
const MAX_DAY_OFFSETS = 20_000;

function dayOffset(zone: string, year: number, month: number, day: number): number | null {
  const key = `${zone}|${year}-${month}-${day}`;
  let offset = dayOffsets.get(key);
  if (offset === undefined) {
    const start = luxon().DateTime.fromObject({ year, month, day }, { zone }).offset;
    const end = luxon().DateTime.fromObject({ year, month, day, hour: 23, minute: 59, second: 59 }, { zone }).offset;
    offset = start === end ? start : null;
    if (dayOffsets.size >= MAX_DAY_OFFSETS) dayOffsets.clear();
    dayOffsets.set(key, offset);
  }
  return offset;
}

/** The wall-clock fields of a time, and whether it is UTC (else it is read in a zone). */
interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  utc: boolean;
}

function wallFields(t: ICAL.Time): Wall {
  return {
    year: t.year,
    month: t.month,
    day: t.day,
    hour: t.hour,
    minute: t.minute,
    second: t.second,
    utc: t.zone?.tzid === "UTC",
  };
}

/** Wall-clock milliseconds (as if UTC) back to fields. */
function wallAt(ms: number, utc: boolean): Wall {
  const d = new Date(ms);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    utc,
  };
}

/** The wall-clock time `t` read in `zone` (a UTC time stays UTC), as an instant. */
function instantOf(t: ICAL.Time | Wall, zone: string): number {
  const w = t instanceof ical().Time ? wallFields(t) : t;
  const wall = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  if (w.utc || zone === "UTC") return wall;
  const offset = dayOffset(zone, w.year, w.month, w.day);
  if (offset !== null) return wall - offset * 60_000;
  // A day with a DST change: luxon's rules for the gap and the repeated hour.
  return luxon()
    .DateTime.fromObject(
      { year: w.year, month: w.month, day: w.day, hour: w.hour, minute: w.minute, second: w.second },
      { zone },
    )
    .toMillis();
}

/** `t`'s wall clock as if it were UTC: arithmetic on wall-clock fields without a zone. */
function wallOf(t: ICAL.Time | Wall): number {
  return Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
}

function floating(dt: DateTime, isDate: boolean): ICAL.Time {
  return ical().Time.fromData({
    year: dt.year,
    month: dt.month,
    day: dt.day,
    hour: dt.hour,
    minute: dt.minute,
    second: dt.second,
    isDate,
  });
}

function timeLike(
  first: ICAL.Time,
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): ICAL.Time {
  const zone = first.zone?.tzid === "UTC" ? ical().Timezone.utcTimezone : undefined;
  return ical().Time.fromData({ year, month, day, hour, minute, second, isDate: first.isDate }, zone);
}

const FIXED_CYCLE_MS: Record<string, number> = {
  SECONDLY: 1000,
  MINUTELY: 60_000,
  HOURLY: 3_600_000,
  DAILY: DAY_MS,
  WEEKLY: 7 * DAY_MS,
};

/**
 * A start for iterating `recur` that lies a whole number of its cycles (INTERVAL x FREQ) after
 * `first` and at or before `targetWall` (a wall-clock time): the rule produces the same occurrences
 * from there on, without walking every one since `first`. Only the occurrence at the new start
 * itself may be spurious (RFC 5545 always counts DTSTART), so the target lies far enough before
 * the horizon for it not to matter. COUNT counts from `first`: such rules are not moved.
 */
function jumpedStart(recur: ICAL.Recur, first: ICAL.Time, targetWall: number): ICAL.Time {
  if (recur.count) return first;
  const interval = Math.max(1, recur.interval || 1);
  const firstWall = wallOf(first);
  if (!(targetWall > firstWall)) return first;
  const fixed = FIXED_CYCLE_MS[recur.freq];
  if (fixed) {
    const k = Math.floor((targetWall - firstWall) / (fixed * interval));
    if (k <= 0) return first;
    const d = new Date(firstWall + k * fixed * interval);
    return timeLike(
      first,
      d.getUTCFullYear(),
      d.getUTCMonth() + 1,
      d.getUTCDate(),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
    );
  }
  // MONTHLY and YEARLY: whole cycles of months keeping the day of the month (a rule starting on
  // the 31st only occurs in months that have one, so the start must stay on a real 31st).
  const months = (recur.freq === "YEARLY" ? 12 : 1) * interval;
  const target = new Date(targetWall);
  const firstMonth = first.year * 12 + (first.month - 1);
  let k = Math.floor((target.getUTCFullYear() * 12 + target.getUTCMonth() - firstMonth) / months);
  for (let tries = 0; k > 0 && tries < 8; tries++, k--) {
    const total = firstMonth + k * months;
    const year = Math.floor(total / 12);
    const month = (total % 12) + 1;
    if (first.day <= ical().Time.daysInMonth(month, year))
      return timeLike(first, year, month, first.day, first.hour, first.minute, first.second);
  }
  return first;
}

/** The longest a cycle of `recur` can last, in milliseconds. */
function cycleMs(recur: ICAL.Recur): number {
  const interval = Math.max(1, recur.interval || 1);
  const fixed = FIXED_CYCLE_MS[recur.freq];
  return interval * (fixed ?? (recur.freq === "YEARLY" ? 366 : 31) * DAY_MS);
}

/**
 * The budget the library's own loops spend from while Steward expands a rule (expansion is
 * synchronous, so one at a time). A rule whose parts never meet (`FREQ=DAILY;BYMONTH=2;
 * BYMONTHDAY=30`) otherwise loops in the library's search for the next occurrence forever, and an
 * impossible yearly rule makes its iterator's constructor walk every year to 20000.
 */
let spending: CalendarBudget | undefined;

/**
 * ical.js's iterator, spending from the budget in the two steps its searches repeat. A subclass
 * rather than a change to the library's own class: hosted apps in the same process may use ical.js
 * too, and they get it as shipped. Made when first needed, as the library is loaded then.
 */
let boundedIterator: typeof ICAL.RecurIterator | undefined;
function boundedRecurIterator(): typeof ICAL.RecurIterator {
  boundedIterator ??= class extends ical().RecurIterator {
    override expand_year_days(year: number): number {
      spending?.spend(LIBRARY_STEP);
      return super.expand_year_days(year);
    }
    override check_contracting_rules(): boolean {
      spending?.spend(LIBRARY_STEP);
      return super.check_contracting_rules();
    }
  };
  return boundedIterator;
}

function withBudget<T>(budget: CalendarBudget, run: () => T): T {
  const outer = spending;
  spending = budget;
  try {
    return run();
  } finally {
    spending = outer;
  }
}

/** A rule that only repeats every INTERVAL hours, days or weeks, with no BY parts, COUNT or UNTIL. */
function simple(recur: ICAL.Recur): boolean {
  return (
    FIXED_CYCLE_MS[recur.freq] !== undefined &&
    !recur.count &&
    !recur.until &&
    Object.keys(recur.parts ?? {}).length === 0
  );
}

/**
 * The occurrences of a simple rule from `start`, by adding its cycle to the wall clock: the same
 * as the library's iterator (which takes some 20 us an occurrence), at a fraction of the cost.
 */
function arithmetic(recur: ICAL.Recur, start: ICAL.Time): { next(): Wall | null } {
  const step = FIXED_CYCLE_MS[recur.freq]! * Math.max(1, recur.interval || 1);
  const utc = start.zone?.tzid === "UTC";
  let wall = wallOf(start);
  return {
    next() {
      const w = wallAt(wall, utc);
      wall += step;
      return w;
    },
  };
}

interface Occurrences {
  recur: ICAL.Recur | undefined;
  first: ICAL.Time;
  zone: string;
  length: { ms: number } | { days: number };
  label?: string;
  /** Extra occurrences (RDATE): a start, or a start and an end. */
  extra?: readonly (ICAL.Time | ICAL.Period)[];
  /** Starts (instants) of occurrences that do not happen (EXDATE, or moved by a RECURRENCE-ID). */
  excluded?: ReadonlySet<number>;
}

/**
 * Occurrences (each lasting `length`, or to the same wall-clock time `days` later for all-day
 * events) that overlap [from, to). Iteration starts near `from`, not at the first occurrence;
 * at most MAX_PERIODS_PER_RULE are kept; every step spends from `budget` (CalendarBoundError when spent).
 */
function expand(o: Occurrences, from: number, to: number, budget: CalendarBudget): Expansion {
  const { zone, length, label } = o;
  const periods: Period[] = [];
  const lengthMs = "ms" in length ? length.ms : (length.days + 1) * DAY_MS;
  const endOf = (t: ICAL.Time | Wall, start: number) => {
    if ("ms" in length) return start + length.ms;
    // All-day: the same wall-clock time `days` later.
    const w = t instanceof ical().Time ? wallFields(t) : t;
    return instantOf(wallAt(wallOf(w) + length.days * DAY_MS, w.utc), zone);
  };
  const add = (t: ICAL.Time | Wall, endAt?: ICAL.Time) => {
    budget.spend();
    const start = instantOf(t, zone);
    if (o.excluded?.has(start)) return start;
    const end = endAt ? instantOf(endAt, zone) : endOf(t, start);
    if (end > from && start < to) periods.push({ start, end, ...(label ? { label } : {}) });
    return start;
  };
  for (const extra of o.extra ?? []) {
    if (extra instanceof ical().Period) add(extra.start, extra.end ?? undefined);
    else add(extra);
  }
  if (!o.recur) {
    if (!o.extra?.length || !o.excluded?.size) add(o.first);
    else if (!o.excluded.has(instantOf(o.first, zone))) add(o.first);
    return { periods: periods.sort((a, b) => a.start - b.start), knownUntil: to };
  }
  let knownUntil = to;
  try {
    // Far enough before `from` that an occurrence at the new start (which RFC 5545 gives even
    // when the rule's parts do not match it) and the rest of its cycle end before `from`.
    const fromWall = wallOf(ical().Time.fromJSDate(new Date(from), true)) - 2 * DAY_MS;
    const start = jumpedStart(o.recur, o.first, fromWall - lengthMs - cycleMs(o.recur));
    const recur = o.recur;
    const it = simple(recur)
      ? arithmetic(recur, start)
      : withBudget(budget, () => new (boundedRecurIterator())({ rule: recur, dtstart: start }));
    const kept = periods.length;
    for (;;) {
      const next = withBudget(budget, () => it.next());
      if (!next) break;
      const at = add(next);
      if (at >= to) break;
      if (periods.length - kept >= MAX_PERIODS_PER_RULE) {
        knownUntil = at;
        break;
      }
    }
  } catch (error) {
    if (error instanceof CalendarBoundError) throw error;
    throw new CalendarBoundError(`the recurrence library gave up: ${(error as Error).message}`);
  }
  return { periods: periods.sort((a, b) => a.start - b.start), knownUntil };
}

/** Periods of a recurrence overlapping [from, to), as far as known; CalendarBoundError past a bound. */
export function recurrenceExpansion(
  spec: RecurrenceSpec,
  from: number,
  to: number,
  budget = new CalendarBudget(),
  label?: string,
): Expansion {
  const problem = recurrenceError(spec);
  if (problem) throw new CalendarBoundError(problem.message);
  const zone = spec.timezone ?? "UTC";
  const recur = ical().Recur.fromString(ruleText(spec.rrule));
  const start = luxon().DateTime.fromISO(spec.start, { zone });
  const duration = parseDuration(spec.duration) as { ms: number };
  return expand(
    { recur, first: floating(start, false), zone, length: duration, ...(label ? { label } : {}) },
    from,
    to,
    budget,
  );
}

/** Periods of a recurrence overlapping [from, to) (all of them: CalendarBoundError when they are not all known). */
export function recurrencePeriods(spec: RecurrenceSpec, from: number, to: number, label?: string): Period[] {
  const e = recurrenceExpansion(spec, from, to, new CalendarBudget(), label);
  if (e.knownUntil < to)
    throw new CalendarBoundError(
      `it has more than ${MAX_PERIODS_PER_RULE} periods before ${new Date(to).toISOString()}`,
    );
  return e.periods;
}

interface CalendarEvent {
  first: ICAL.Time;
  zone: string | undefined;
  length: { ms: number } | { days: number };
  recur: ICAL.Recur | undefined;
  label: string | undefined;
  extra: (ICAL.Time | ICAL.Period)[];
  exdates: ICAL.Time[];
  uid: string | undefined;
  /** Set on an event that replaces one occurrence of the event with the same UID. */
  recurrenceId: ICAL.Time | undefined;
}

export interface ParsedCalendar {
  /** One entry per VEVENT: its first start, length, rule, extra and excluded dates, ready to expand. */
  events: CalendarEvent[];
  /** X-WR-TIMEZONE of the calendar, the zone of its all-day and floating events unless the policy says one. */
  zone: string | undefined;
}

/** Parse an iCalendar file; all-day events (holidays) last whole days on the calendar's wall clock. */
export function parseCalendar(text: string): ParsedCalendar | { error: string } {
  if (Buffer.byteLength(text) > MAX_CALENDAR_BYTES)
    return { error: `it is larger than ${MAX_CALENDAR_BYTES / 1024} KB` };
  let root: ICAL.Component;
  try {
    const { Component, parse } = ical();
    root = new Component(parse(text) as any[]);
  } catch (error) {
    return { error: `it is not an iCalendar file: ${(error as Error).message}` };
  }
  if (root.name !== "vcalendar") return { error: "it has no VCALENDAR" };
  const zone = stringValue(root.getFirstPropertyValue("x-wr-timezone"));
  const events: ParsedCalendar["events"] = [];
  try {
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
        const days = dtend
          ? Math.max(1, dtend.subtractDate(first).toSeconds() / 86_400)
          : durationValue
            ? Math.max(1, durationValue.toSeconds() / 86_400)
            : 1;
        length = { days: Math.round(days) };
      } else {
        const seconds = dtend ? dtend.subtractDateTz(first).toSeconds() : durationValue ? durationValue.toSeconds() : 0;
        length = { ms: Math.max(0, seconds) * 1000 };
      }
      const label = stringValue(vevent.getFirstPropertyValue("summary"));
      const rrule = vevent.getFirstPropertyValue("rrule") as ICAL.Recur | undefined;
      // An event recurring more often than hourly cannot be skipped: it would drop a freeze.
      if (rrule && !ALLOWED_FREQ.has(rrule.freq))
        return { error: `event ${label ? `"${label}" ` : ""}recurs ${rrule.freq}, more often than hourly` };
      const values = (name: string) => vevent.getAllProperties(name).flatMap((p) => p.getValues() as unknown[]);
      const extra = values("rdate").filter(
        (v): v is ICAL.Time | ICAL.Period => v instanceof ical().Time || v instanceof ical().Period,
      );
      const exdates = values("exdate").filter((v): v is ICAL.Time => v instanceof ical().Time);
      const recurrenceId = vevent.getFirstPropertyValue("recurrence-id") as ICAL.Time | undefined;
      events.push({
        first,
        zone: tzid,
        length,
        recur: rrule ?? undefined,
        label,
        extra,
        exdates,
        uid: stringValue(vevent.getFirstPropertyValue("uid")),
        recurrenceId: recurrenceId ?? undefined,
      });
    }
  } catch (error) {
    return { error: `it cannot be read: ${(error as Error).message}` };
  }
  return { events, zone };
}

function stringValue(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** `t` as an ICAL.Time to iterate: a UTC time stays UTC, anything else becomes wall-clock (floating). */
function iterable(t: ICAL.Time): ICAL.Time {
  if (t.zone?.tzid === "UTC") return t;
  return ical().Time.fromData({
    year: t.year,
    month: t.month,
    day: t.day,
    hour: t.hour,
    minute: t.minute,
    second: t.second,
    isDate: t.isDate,
  });
}

/**
 * Periods of a parsed calendar overlapping [from, to), as far as known (the least `knownUntil` of
 * its events); `zone` is the policy's, over the file's own. CalendarBoundError past a bound.
 */
export function calendarExpansion(
  calendar: ParsedCalendar,
  from: number,
  to: number,
  zone?: string,
  budget = new CalendarBudget(),
): Expansion {
  const periods: Period[] = [];
  let knownUntil = to;
  const zoneOf = (e: CalendarEvent) => e.zone ?? zone ?? calendar.zone ?? "UTC";
  // An occurrence moved or changed by a RECURRENCE-ID event no longer happens as the rule says.
  const moved = new Map<string, Set<number>>();
  for (const e of calendar.events) {
    if (!e.recurrenceId || !e.uid) continue;
    budget.spend();
    const set = moved.get(e.uid) ?? new Set<number>();
    set.add(instantOf(iterable(e.recurrenceId), zoneOf(e)));
    moved.set(e.uid, set);
  }
  for (const e of calendar.events) {
    const eventZone = zoneOf(e);
    const excluded = new Set<number>(e.recurrenceId ? [] : (moved.get(e.uid ?? "") ?? []));
    for (const x of e.exdates) {
      budget.spend();
      excluded.add(instantOf(iterable(x), eventZone));
    }
    const expansion = expand(
      {
        recur: e.recur,
        first: iterable(e.first),
        zone: eventZone,
        length: e.length,
        extra: e.extra.map((x) => (x instanceof ical().Period ? x : iterable(x))),
        excluded,
        ...(e.label ? { label: e.label } : {}),
      },
      from,
      to,
      budget,
    );
    periods.push(...expansion.periods);
    knownUntil = Math.min(knownUntil, expansion.knownUntil);
  }
  return { periods: periods.filter((p) => p.start <= knownUntil).sort((a, b) => a.start - b.start), knownUntil };
}

/** Periods of a parsed calendar overlapping [from, to) (all of them: CalendarBoundError when they are not all known). */
export function calendarPeriods(calendar: ParsedCalendar, from: number, to: number, zone?: string): Period[] {
  const e = calendarExpansion(calendar, from, to, zone);
  if (e.knownUntil < to)
    throw new CalendarBoundError(
      `an event has more than ${MAX_PERIODS_PER_RULE} periods before ${new Date(to).toISOString()}`,
    );
  return e.periods;
}
