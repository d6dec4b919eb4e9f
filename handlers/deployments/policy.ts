// The `deployments` section of `.github/steward.yml`: per environment (name or glob, first match
// wins), what a deployment needs before Steward approves it.
import {
  type PolicySection,
  type SemanticCheck,
  globError,
  matchesAny,
  ACT_MODE_SCHEMA,
  type ActMode,
} from "../../src/index.js";
import { DAYS, parseHours, parseInstant, zoneError, type Day } from "./calendar.js";
import { CalendarBudget, MAX_CALENDAR_STEPS, parseDuration, recurrenceCost, recurrenceError } from "./recurrence.js";

/** Windows an environment may list (each is evaluated on every decision). */
export const MAX_WINDOWS = 32;
/** Freezes an environment may list. */
export const MAX_FREEZES = 64;
/** Recurring (`rrule`) and calendar entries an environment may list, windows and freezes together. */
export const MAX_RECURRING = 16;
/** What validation spends trying a file's rules near the present: per rule, and for the whole file. */
/** Steps validation spends probing one file's recurring rules, each rule within a decision's bound. */
const PROBES_STEPS = 10 * MAX_CALENDAR_STEPS;

/** Recurring periods (RFC 5545): `rrule` from `start` (wall clock in `timezone`), each lasting `duration`. */
interface Recurring {
  rrule?: string;
  start?: string;
  duration?: string;
  /** An iCalendar file in the admin repository (e.g. `.github/steward/holidays.ics`): its events are the periods. */
  calendar?: string;
}

/**
 * A window: weekly wall-clock (days default every day, hours `HH:MM-HH:MM` default all day), or
 * recurring (`rrule` + `start` + `duration`), or a calendar's events; zone default UTC.
 */
export interface DeployWindow extends Recurring {
  days?: readonly Day[];
  hours?: string;
  timezone?: string;
}
/**
 * A period with no deployments: dated (`from`/`to`, read in `timezone` without an offset), or
 * recurring (`rrule` + `start` + `duration`), or every event of a calendar (holidays).
 */
export interface Freeze extends Recurring {
  from?: string;
  to?: string;
  reason?: string;
  timezone?: string;
}

/**
 * A required check: any app's run of that name, or only a run by one of `app`/`apps` (GitHub App
 * slugs, as a check run's `app.slug` says: `github-actions` for workflow jobs). Pinning matters
 * because any app with `checks: write`, or a workflow's GITHUB_TOKEN, can create a run of any name.
 */
export type CheckEntry = string | { name: string; app?: string; apps?: string[] };

/** GitHub App slugs: lowercase letters, digits and single hyphens. */
export const APP_SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** An entry's name and the apps whose runs count (undefined: any app). */
/**
 * Whether a policy's name for a check or environment names `name`: exactly, or as a glob. The
 * exact test comes first because real names carry glob characters (`build (linux)`, `deploy [eu]`)
 * and still name themselves.
 */
export function namesIt(pattern: string, name: string): boolean {
  return pattern === name || matchesAny([pattern], name);
}

export function checkEntry(entry: CheckEntry): { name: string; apps?: string[] } {
  if (typeof entry === "string") return { name: entry };
  const apps = entry.app !== undefined ? [entry.app] : entry.apps;
  return apps ? { name: entry.name, apps } : { name: entry.name };
}

export interface EnvironmentRule {
  /** `always` approves every deployment, `never` rejects every one; other keys are then not allowed. */
  approve?: "always" | "never";
  /** Branch globs allowed to deploy: the deployed commit must be on the branch (its tip or reachable from it). */
  branches?: string[];
  /** Tag globs allowed to deploy: the tag must point at the deployed commit. */
  tags?: string[];
  /**
   * Check runs that must have concluded success on the sha: a name (or glob), run by any app, or
   * `{ name, app }` / `{ name, apps }` counting only runs of those GitHub Apps (by slug).
   */
  checks?: CheckEntry[];
  /** Environments the same sha must have deployed to successfully first. */
  after?: string[];
  /** Deployments go ahead only inside one of these windows. */
  windows?: DeployWindow[];
  /** Periods in which nothing deploys. */
  freeze?: Freeze[];
  outside_window?: "wait" | "reject";
  pending_checks?: "wait" | "reject";
  /** A held deployment's status report is sent at most this often (`30m`, `1h`), and again after it while held. */
  report_every?: string;
  /** `report`: decide and say what the answer would have been, never approve or reject (default: the section's). */
  mode?: ActMode;
}

/**
 * An organisation gate: every repository whose custom property `property` has one of `values`
 * gates the listed environments by these rules as well as by its own. Read from the organisation
 * policy (admin repository) only; a repository's own file may tighten but never loosen it.
 */
export interface PropertyGate {
  property: string;
  values: string[];
  environments: Record<string, EnvironmentRule>;
}

export interface DeploymentsPolicy {
  /** Environment name or glob -> rule; the first matching entry (in file order) applies. */
  environments: Record<string, EnvironmentRule>;
  /** `report`: every environment's rule only reports unless it says `mode: act` (default `act`). */
  mode?: ActMode;
  /** Organisation gates by repository custom property (organisation policy only). */
  by_property?: PropertyGate[];
}

const stringList = { type: "array", items: { type: "string", minLength: 1 } } as const;

/** When a window or freeze recurs: an RFC 5545 rule from a start for a duration, or an iCalendar file, in a time zone. */
const calendarTimeSchema = {
  timezone: { type: "string", minLength: 1 },
  rrule: { type: "string", minLength: 1 },
  start: { type: "string", minLength: 1 },
  duration: { type: "string", minLength: 1 },
  calendar: { type: "string", minLength: 1 },
} as const;

const windowSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    days: { type: "array", items: { enum: [...DAYS] }, minItems: 1 },
    hours: { type: "string" },
    ...calendarTimeSchema,
  },
} as const;

const freezeSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    from: { type: "string" },
    to: { type: "string" },
    reason: { type: "string" },
    ...calendarTimeSchema,
  },
} as const;

const ruleSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    approve: { enum: ["always", "never"] },
    branches: stringList,
    tags: stringList,
    checks: {
      type: "array",
      items: {
        oneOf: [
          { type: "string", minLength: 1 },
          {
            type: "object",
            additionalProperties: false,
            required: ["name"],
            properties: {
              name: { type: "string", minLength: 1 },
              app: { type: "string", minLength: 1, maxLength: 100 },
              apps: {
                type: "array",
                items: { type: "string", minLength: 1, maxLength: 100 },
                minItems: 1,
                maxItems: 20,
              },
            },
          },
        ],
      },
    },
    after: stringList,
    windows: { type: "array", items: windowSchema },
    freeze: { type: "array", items: freezeSchema },
    outside_window: { enum: ["wait", "reject"] },
    pending_checks: { enum: ["wait", "reject"] },
    report_every: { type: "string", minLength: 1 },
    mode: ACT_MODE_SCHEMA,
  },
} as const;

export const deploymentsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    environments: { type: "object", additionalProperties: ruleSchema },
    mode: ACT_MODE_SCHEMA,
    by_property: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["property", "values", "environments"],
        properties: {
          property: { type: "string", minLength: 1 },
          values: { type: "array", items: { type: "string", minLength: 1 }, minItems: 1 },
          environments: { type: "object", additionalProperties: ruleSchema },
        },
      },
    },
  },
} as const;

export const deploymentsDefaults: DeploymentsPolicy = { environments: {} };

const RULE_KEYS = [
  "branches",
  "tags",
  "checks",
  "after",
  "windows",
  "freeze",
  "outside_window",
  "pending_checks",
  "report_every",
] as const;

/** Checks a schema cannot express: globs, time zones, hour ranges, freeze ranges and their overlaps. */
export const checkDeployments: SemanticCheck<DeploymentsPolicy> = (value, report) => {
  const probes: Probes = { now: Date.now(), stepsLeft: PROBES_STEPS };
  checkEnvironments(value.environments ?? {}, ["environments"], report, probes);
  (value.by_property ?? []).forEach((gate, i) => {
    if (gate.environments) checkEnvironments(gate.environments, ["by_property", i, "environments"], report, probes);
  });
};

/** Trying rules near the present at validation: the clock, and the time spent on it so far. */
interface Probes {
  now: number;
  /** Steps left for the file's rules: past them, later rules are not tried (a decision still bounds them). */
  stepsLeft: number;
}

/** Reports windows, freezes and recurring entries past what one decision evaluates. */
function checkSizes(rule: EnvironmentRule, at: (string | number)[], report: Report): void {
  const windows = rule.windows ?? [];
  const freezes = rule.freeze ?? [];
  if (windows.length > MAX_WINDOWS)
    report(
      [...at, "windows", MAX_WINDOWS],
      `at most ${MAX_WINDOWS} windows per environment; this one lists ${windows.length}`,
    );
  if (freezes.length > MAX_FREEZES)
    report(
      [...at, "freeze", MAX_FREEZES],
      `at most ${MAX_FREEZES} freezes per environment; this one lists ${freezes.length}`,
    );
  const recurring = [
    ...windows.map((w, i) => ({ e: w, path: ["windows", i] })),
    ...freezes.map((f, i) => ({ e: f, path: ["freeze", i] })),
  ].filter(({ e }) => e.rrule !== undefined || e.calendar !== undefined);
  if (recurring.length > MAX_RECURRING) {
    report(
      [...at, ...recurring[MAX_RECURRING]!.path],
      `at most ${MAX_RECURRING} recurring or calendar windows and freezes per environment; this one lists ${recurring.length}`,
    );
  }
}

function checkEnvironments(
  environments: Record<string, EnvironmentRule>,
  prefix: (string | number)[],
  report: Report,
  probes: Probes,
): void {
  for (const [name, rule] of Object.entries(environments)) {
    const at = [...prefix, name];
    const nameProblem = globError(name);
    if (nameProblem) report(at, nameProblem);
    if (!rule) continue;
    if (rule.approve) {
      for (const key of RULE_KEYS) {
        if (rule[key] !== undefined) report([...at, key], `"${key}" has no effect with "approve: ${rule.approve}"`);
      }
    }
    for (const key of ["branches", "tags", "after"] as const) {
      rule[key]?.forEach((glob, i) => {
        const problem = globError(glob);
        if (problem) report([...at, key, i], problem);
      });
    }
    rule.checks?.forEach((entry, i) => checkCheckEntry(entry, [...at, "checks", i], report));
    if (rule.after?.includes(name)) report([...at, "after"], `environment "${name}" cannot come after itself`);
    checkSizes(rule, at, report);
    checkWindows(rule.windows ?? [], [...at, "windows"], report, probes);
    checkFreezes(rule.freeze ?? [], [...at, "freeze"], report, probes);
    if (rule.report_every !== undefined) {
      const every = parseDuration(rule.report_every);
      if ("error" in every) report([...at, "report_every"], every.error);
      else if (every.ms < 60_000)
        report([...at, "report_every"], `report_every "${rule.report_every}" is shorter than a minute`);
    }
  }
}

type Report = Parameters<SemanticCheck<unknown>>[1];

/** A `checks` entry: its name is a valid glob; a pin names apps by valid slugs, one way only. */
function checkCheckEntry(entry: CheckEntry, at: (string | number)[], report: Report): void {
  if (typeof entry === "string") {
    const problem = globError(entry);
    if (problem) report(at, problem);
    return;
  }
  const problem = globError(entry.name);
  if (problem) report([...at, "name"], problem);
  if (entry.app !== undefined && entry.apps !== undefined) {
    report([...at, "apps"], `use "app" or "apps" in one check, not both`);
    return;
  }
  const slugs =
    entry.app !== undefined
      ? [{ slug: entry.app, path: [...at, "app"] }]
      : (entry.apps ?? []).map((slug, j) => ({ slug, path: [...at, "apps", j] }));
  for (const { slug, path } of slugs) {
    if (!APP_SLUG.test(slug))
      report(
        path,
        `app "${slug}" is not a GitHub App slug (lowercase letters, digits and hyphens, as a check run's app.slug, e.g. github-actions)`,
      );
  }
  if (entry.app === undefined && entry.apps === undefined)
    report(
      at,
      `check "${entry.name}" names no app: write it as a plain name to accept any app's run, or add "app" to pin it`,
      "warning",
    );
}

const RECURRING_KEYS = ["rrule", "start", "duration"] as const;
const CALENDAR_PATH = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*\.ics$/;

/**
 * An entry is one kind: recurring (`rrule` + `start` + `duration`), a `calendar`, or the plain kind
 * (`plainKeys`). Reports mixed or incomplete entries; returns the kind, or undefined when invalid.
 */
function entryKind(
  e: Recurring & Record<string, unknown>,
  plainKeys: readonly string[],
  at: (string | number)[],
  report: Report,
  probes: Probes,
): "recurring" | "calendar" | "plain" | undefined {
  const recurring = RECURRING_KEYS.filter((k) => e[k] !== undefined);
  const plain = plainKeys.filter((k) => e[k] !== undefined);
  const kinds = [recurring.length > 0, e.calendar !== undefined, plain.length > 0].filter(Boolean).length;
  if (kinds > 1) {
    const first = recurring[0] ?? (e.calendar !== undefined ? "calendar" : plain[0]!);
    report(
      [...at, first],
      `use one of ${RECURRING_KEYS.join("/")}, calendar or ${plainKeys.join("/")} in one entry, not several`,
    );
    return undefined;
  }
  if (e.calendar !== undefined) {
    if (!CALENDAR_PATH.test(e.calendar) || e.calendar.split("/").some((part) => part === ".." || part === ".")) {
      report(
        [...at, "calendar"],
        `calendar "${e.calendar}" is not a relative path to an .ics file in the admin repository`,
      );
      return undefined;
    }
    return "calendar";
  }
  if (recurring.length === 0) return "plain";
  const missing = RECURRING_KEYS.filter((k) => e[k] === undefined);
  if (missing.length) {
    report([...at, recurring[0]!], `a recurring entry needs ${missing.map((k) => `"${k}"`).join(" and ")} too`);
    return undefined;
  }
  const spec = {
    rrule: e.rrule!,
    start: e.start!,
    duration: e.duration!,
    ...(typeof e.timezone === "string" ? { timezone: e.timezone } : {}),
  };
  const problem = recurrenceError(spec);
  if (problem) {
    report([...at, problem.key], problem.message);
    return undefined;
  }
  // Try the rule near the present, as a decision would: one that cannot be evaluated within the
  // bounds would hold every deployment it guards. Validation spends a bounded time on this.
  if (probes.stepsLeft >= MAX_CALENDAR_STEPS) {
    const budget = new CalendarBudget();
    const cost = recurrenceCost(spec, probes.now, budget);
    probes.stepsLeft -= budget.spent();
    if (cost) report([...at, "rrule"], cost.message, cost.severity);
  }
  return "recurring";
}

function checkWindows(windows: DeployWindow[], at: (string | number)[], report: Report, probes: Probes): void {
  const parsed: { i: number; days: Set<Day>; zone: string; start: number; end: number }[] = [];
  windows.forEach((w, i) => {
    let ok = true;
    if (w.timezone !== undefined) {
      const problem = zoneError(w.timezone);
      if (problem) {
        report([...at, i, "timezone"], problem);
        ok = false;
      }
    }
    if (!ok) return;
    if (
      entryKind(w as DeployWindow & Record<string, unknown>, ["days", "hours"], [...at, i], report, probes) !== "plain"
    )
      return;
    const days = w.days ?? [...DAYS];
    if (new Set(days).size !== days.length) report([...at, i, "days"], "a day is listed twice");
    let range = { start: 0, end: 24 * 60 };
    if (w.hours !== undefined) {
      const hours = parseHours(w.hours);
      if ("error" in hours) {
        report([...at, i, "hours"], hours.error);
        ok = false;
      } else range = hours;
    }
    if (ok) parsed.push({ i, days: new Set(days), zone: w.timezone ?? "UTC", ...range });
  });
  // Overlaps are only decidable without a calendar when both windows share a zone.
  for (let a = 0; a < parsed.length; a++) {
    for (let b = a + 1; b < parsed.length; b++) {
      const x = parsed[a]!;
      const y = parsed[b]!;
      const sharedDay = [...x.days].some((d) => y.days.has(d));
      if (x.zone === y.zone && sharedDay && x.start < y.end && y.start < x.end) {
        report([...at, y.i], `window overlaps window ${x.i + 1}`);
      }
    }
  }
}

function checkFreezes(freezes: Freeze[], at: (string | number)[], report: Report, probes: Probes): void {
  const parsed: { i: number; from: number; to: number }[] = [];
  freezes.forEach((f, i) => {
    if (f.timezone !== undefined) {
      const problem = zoneError(f.timezone);
      if (problem) {
        report([...at, i, "timezone"], problem);
        return;
      }
    }
    if (entryKind(f as Freeze & Record<string, unknown>, ["from", "to"], [...at, i], report, probes) !== "plain")
      return;
    if (f.from === undefined || f.to === undefined) {
      report([...at, i], `a freeze needs "from" and "to", or "rrule" + "start" + "duration", or "calendar"`);
      return;
    }
    const from = parseInstant(f.from, f.timezone);
    const to = parseInstant(f.to, f.timezone);
    if ("error" in from) report([...at, i, "from"], from.error);
    if ("error" in to) report([...at, i, "to"], to.error);
    if ("error" in from || "error" in to) return;
    if (to.ms <= from.ms) {
      report([...at, i, "to"], `freeze ends (${f.to}) before it starts (${f.from})`);
      return;
    }
    parsed.push({ i, from: from.ms, to: to.ms });
  });
  for (let a = 0; a < parsed.length; a++) {
    for (let b = a + 1; b < parsed.length; b++) {
      const x = parsed[a]!;
      const y = parsed[b]!;
      if (x.from < y.to && y.from < x.to) report([...at, y.i], `freeze overlaps freeze ${x.i + 1}`);
    }
  }
}

export const deploymentsSection: PolicySection<DeploymentsPolicy> = {
  key: "deployments",
  // On where the section is absent: a pending protection rule must get an answer; without a section the defaults decide.
  enabledByDefault: true,
  schema: deploymentsSchema,
  defaults: deploymentsDefaults,
  check: checkDeployments,
};
