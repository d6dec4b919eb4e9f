// A rule's windows and freezes made concrete around the decision time: weekly windows and dated
// freezes stay as written; recurrence rules and calendar files become periods. Pure: calendar
// files arrive as text in the facts.
import type { FreezeSpec, WindowSpec } from "./calendar.js";
import type { DeployWindow, EnvironmentRule, Freeze } from "./policy.js";
import {
  CalendarBoundError,
  CalendarBudget,
  MAX_PERIODS_PER_RULE,
  calendarExpansion,
  parseCalendar,
  parseDuration,
  recurrenceExpansion,
  type Expansion,
} from "./recurrence.js";

/** Far enough ahead for the 30 days a deployment may wait, and a year of "next opening". */
const LOOK_AHEAD_MS = 367 * 86_400_000;

/** Calendar file path -> its text, or why it could not be read. */
export type CalendarTexts = Record<string, { text: string } | { error: string }>;

export interface Timetable {
  windows: WindowSpec[];
  freezes: FreezeSpec[];
  /** Calendars and rules that could not be used: the deployment waits (and polls) rather than guess. */
  problems: string[];
  /**
   * Up to when every window and freeze is known (the horizon asked for, or where a dense rule's
   * kept periods end): nothing is decided from what lies after it.
   */
  knownUntil: number;
}

/** Every calendar path the rule names (fetched by the handler from the admin repository). */
export function calendarPaths(rule: EnvironmentRule): string[] {
  const paths = [...(rule.windows ?? []), ...(rule.freeze ?? [])]
    .map((e) => e.calendar)
    .filter((p): p is string => !!p);
  return [...new Set(paths)];
}

function hhmm(start: string): string {
  const m = /T(\d{2}:\d{2})/.exec(start);
  return m ? m[1]! : "00:00";
}

function recurrenceLabel(e: DeployWindow | Freeze): string {
  return `rrule ${e.rrule!.replace(/^RRULE:/i, "")} from ${hhmm(e.start ?? "")} for ${e.duration} ${e.timezone ?? "UTC"}`;
}

/** How a rule reads in a reason (`freeze rrule FREQ=DAILY from 00:00 for 24h UTC`). */
function entryLabel(kind: "window" | "freeze", e: DeployWindow | Freeze): string {
  return `${kind} ${e.calendar ? `calendar ${e.calendar}` : recurrenceLabel(e)}`;
}

/**
 * The rule's windows and freezes around `now`. Every rule and calendar spends from one `budget`;
 * one that goes past it is a problem naming it (the deployment holds), never a period less.
 */
export function buildTimetable(
  rule: EnvironmentRule,
  calendars: CalendarTexts,
  now: number,
  budget = new CalendarBudget(),
): Timetable {
  // Only periods still running at `now` or later matter (a freeze started last month may still run:
  // expansion looks back by the rule's duration).
  const from = now;
  const to = now + LOOK_AHEAD_MS;
  const problems: string[] = [];
  let knownUntil = to;
  const parsed = new Map<string, ReturnType<typeof parseCalendar>>();
  /** The expansion, or undefined after recording why it cannot be had. */
  const expanded = (
    kind: "window" | "freeze",
    e: DeployWindow | Freeze,
    run: () => Expansion,
  ): Expansion | undefined => {
    try {
      const expansion = run();
      if (expansion.knownUntil <= now)
        throw new CalendarBoundError(`it has more than ${MAX_PERIODS_PER_RULE} periods running at once`);
      knownUntil = Math.min(knownUntil, expansion.knownUntil);
      return expansion;
    } catch (error) {
      if (!(error instanceof CalendarBoundError)) throw error;
      problems.push(`${entryLabel(kind, e)} cannot be evaluated (${error.message})`);
      return undefined;
    }
  };
  const periodsOf = (kind: "window" | "freeze", e: DeployWindow | Freeze, path: string, zone: string | undefined) => {
    let cal = parsed.get(path);
    if (!cal) {
      const text = calendars[path];
      cal = !text ? { error: "it was not read" } : "error" in text ? text : parseCalendar(text.text);
      parsed.set(path, cal);
      if ("error" in cal) problems.push(`calendar ${path} cannot be used (${cal.error})`);
    }
    if ("error" in cal) return undefined;
    const c = cal;
    const expansion = expanded(kind, e, () => calendarExpansion(c, from, to, zone, budget));
    return expansion && { periods: expansion.periods, zone: zone ?? c.zone };
  };
  const recurring = (kind: "window" | "freeze", e: DeployWindow | Freeze) =>
    expanded(kind, e, () =>
      recurrenceExpansion(
        { rrule: e.rrule!, start: e.start!, duration: e.duration!, ...(e.timezone ? { timezone: e.timezone } : {}) },
        from,
        to,
        budget,
      ),
    );

  const windows: WindowSpec[] = [];
  for (const w of rule.windows ?? []) {
    if (w.rrule && w.start && w.duration) {
      windows.push({ timezone: w.timezone, label: recurrenceLabel(w), periods: recurring("window", w)?.periods ?? [] });
    } else if (w.calendar) {
      windows.push({
        timezone: w.timezone,
        label: `calendar ${w.calendar}`,
        periods: periodsOf("window", w, w.calendar, w.timezone)?.periods ?? [],
      });
    } else windows.push(w);
  }

  const freezes: FreezeSpec[] = [];
  const asFreeze = (
    f: Freeze,
    start: number,
    end: number,
    label: string | undefined,
    zone = f.timezone,
  ): FreezeSpec => {
    const reason = [f.reason, label].filter(Boolean).join(": ");
    return {
      from: new Date(start).toISOString(),
      to: new Date(end).toISOString(),
      period: { start, end },
      ...(reason ? { reason } : {}),
      ...(zone ? { timezone: zone } : {}),
    };
  };
  for (const f of rule.freeze ?? []) {
    if (f.rrule && f.start && f.duration) {
      for (const p of recurring("freeze", f)?.periods ?? []) {
        freezes.push(asFreeze(f, p.start, p.end, undefined));
      }
    } else if (f.calendar) {
      // Reasons read in the calendar's zone unless the policy names one.
      const cal = periodsOf("freeze", f, f.calendar, f.timezone);
      for (const p of cal?.periods ?? []) freezes.push(asFreeze(f, p.start, p.end, p.label, cal?.zone));
    } else if (f.from && f.to) freezes.push({ ...f, from: f.from, to: f.to });
  }
  return { windows, freezes, problems, knownUntil };
}

/** `report_every` in milliseconds (validated), or undefined. */
export function reportEveryMs(rule: EnvironmentRule): number | undefined {
  if (!rule.report_every) return undefined;
  const d = parseDuration(rule.report_every);
  return "error" in d ? undefined : d.ms;
}
