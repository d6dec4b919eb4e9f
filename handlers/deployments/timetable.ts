// A rule's windows and freezes made concrete around the decision time: weekly windows and dated
// freezes stay as written; recurrence rules and calendar files become periods. Pure: calendar
// files arrive as text in the facts.
import type { FreezeSpec, WindowSpec } from "./calendar.js";
import type { DeployWindow, EnvironmentRule, Freeze } from "./policy.js";
import { calendarPeriods, parseCalendar, parseDuration, recurrencePeriods } from "./recurrence.js";

/** How far back a period may start and still matter (a freeze started last month may still run). */
const LOOK_BACK_MS = 62 * 86_400_000;
/** Far enough ahead for the 30 days a deployment may wait, and a year of "next opening". */
const LOOK_AHEAD_MS = 367 * 86_400_000;

/** Calendar file path -> its text, or why it could not be read. */
export type CalendarTexts = Record<string, { text: string } | { error: string }>;

export interface Timetable {
  windows: WindowSpec[];
  freezes: FreezeSpec[];
  /** Calendars that could not be used: the deployment waits (and polls) rather than guess. */
  problems: string[];
}

/** Every calendar path the rule names (fetched by the handler from the admin repository). */
export function calendarPaths(rule: EnvironmentRule): string[] {
  const paths = [...(rule.windows ?? []), ...(rule.freeze ?? [])].map((e) => e.calendar).filter((p): p is string => !!p);
  return [...new Set(paths)];
}

function hhmm(start: string): string {
  const m = /T(\d{2}:\d{2})/.exec(start);
  return m ? m[1]! : "00:00";
}

function recurrenceLabel(e: DeployWindow | Freeze): string {
  return `rrule ${e.rrule!.replace(/^RRULE:/i, "")} from ${hhmm(e.start ?? "")} for ${e.duration} ${e.timezone ?? "UTC"}`;
}

export function buildTimetable(rule: EnvironmentRule, calendars: CalendarTexts, now: number): Timetable {
  const from = now - LOOK_BACK_MS;
  const to = now + LOOK_AHEAD_MS;
  const problems: string[] = [];
  const parsed = new Map<string, ReturnType<typeof parseCalendar>>();
  const periodsOf = (path: string, zone: string | undefined) => {
    let cal = parsed.get(path);
    if (!cal) {
      const text = calendars[path];
      cal = !text ? { error: "it was not read" } : "error" in text ? text : parseCalendar(text.text);
      parsed.set(path, cal);
      if ("error" in cal) problems.push(`calendar ${path} cannot be used (${cal.error})`);
    }
    return "error" in cal ? undefined : { periods: calendarPeriods(cal, from, to, zone), zone: zone ?? cal.zone };
  };

  const windows: WindowSpec[] = [];
  for (const w of rule.windows ?? []) {
    if (w.rrule && w.start && w.duration) {
      windows.push({ timezone: w.timezone, label: recurrenceLabel(w), periods: recurrencePeriods({ rrule: w.rrule, start: w.start, duration: w.duration, timezone: w.timezone }, from, to) });
    } else if (w.calendar) {
      windows.push({ timezone: w.timezone, label: `calendar ${w.calendar}`, periods: periodsOf(w.calendar, w.timezone)?.periods ?? [] });
    } else windows.push(w);
  }

  const freezes: FreezeSpec[] = [];
  const asFreeze = (f: Freeze, start: number, end: number, label: string | undefined, zone = f.timezone): FreezeSpec => {
    const reason = [f.reason, label].filter(Boolean).join(": ");
    return { from: new Date(start).toISOString(), to: new Date(end).toISOString(), ...(reason ? { reason } : {}), ...(zone ? { timezone: zone } : {}) };
  };
  for (const f of rule.freeze ?? []) {
    if (f.rrule && f.start && f.duration) {
      for (const p of recurrencePeriods({ rrule: f.rrule, start: f.start, duration: f.duration, timezone: f.timezone }, from, to)) {
        freezes.push(asFreeze(f, p.start, p.end, undefined));
      }
    } else if (f.calendar) {
      // Reasons read in the calendar's zone unless the policy names one.
      const cal = periodsOf(f.calendar, f.timezone);
      for (const p of cal?.periods ?? []) freezes.push(asFreeze(f, p.start, p.end, p.label, cal?.zone));
    } else if (f.from && f.to) freezes.push({ ...f, from: f.from, to: f.to });
  }
  return { windows, freezes, problems };
}

/** `report_every` in milliseconds (validated), or undefined. */
export function reportEveryMs(rule: EnvironmentRule): number | undefined {
  if (!rule.report_every) return undefined;
  const d = parseDuration(rule.report_every);
  return "error" in d ? undefined : d.ms;
}
