// The `deployments` section of `.github/steward.yml`: per environment (name or glob, first match
// wins), what a deployment needs before Steward approves it.
import { type PolicySection, type SemanticCheck, globError } from "../../src/index.js";
import { DAYS, parseHours, parseInstant, zoneError, type Day, type FreezeSpec, type WindowSpec } from "./calendar.js";

/** A weekly wall-clock window (days default every day, hours `HH:MM-HH:MM` default all day, zone default UTC). */
export type DeployWindow = WindowSpec;
/** A period with no deployments; `from`/`to` without an offset are read in `timezone` (default UTC). */
export type Freeze = FreezeSpec;

export interface EnvironmentRule {
  /** `always` approves every deployment, `never` rejects every one; other keys are then not allowed. */
  approve?: "always" | "never";
  /** Branch or tag globs allowed to deploy. */
  branches?: string[];
  /** Check-run names (or globs) that must have concluded success on the sha. */
  checks?: string[];
  /** Environments the same sha must have deployed to successfully first. */
  after?: string[];
  /** Deployments go ahead only inside one of these windows. */
  windows?: DeployWindow[];
  /** Periods in which nothing deploys. */
  freeze?: Freeze[];
  outside_window?: "wait" | "reject";
  pending_checks?: "wait" | "reject";
}

export interface DeploymentsPolicy {
  /** Environment name or glob -> rule; the first matching entry (in file order) applies. */
  environments: Record<string, EnvironmentRule>;
}

const stringList = { type: "array", items: { type: "string", minLength: 1 } } as const;

const windowSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    days: { type: "array", items: { enum: [...DAYS] }, minItems: 1 },
    hours: { type: "string" },
    timezone: { type: "string", minLength: 1 },
  },
} as const;

const freezeSchema = {
  type: "object",
  additionalProperties: false,
  required: ["from", "to"],
  properties: {
    from: { type: "string" },
    to: { type: "string" },
    reason: { type: "string" },
    timezone: { type: "string", minLength: 1 },
  },
} as const;

const ruleSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    approve: { enum: ["always", "never"] },
    branches: stringList,
    checks: stringList,
    after: stringList,
    windows: { type: "array", items: windowSchema },
    freeze: { type: "array", items: freezeSchema },
    outside_window: { enum: ["wait", "reject"] },
    pending_checks: { enum: ["wait", "reject"] },
  },
} as const;

export const deploymentsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    environments: { type: "object", additionalProperties: ruleSchema },
  },
} as const;

export const deploymentsDefaults: DeploymentsPolicy = { environments: {} };

const RULE_KEYS = ["branches", "checks", "after", "windows", "freeze", "outside_window", "pending_checks"] as const;

/** Checks a schema cannot express: globs, time zones, hour ranges, freeze ranges and their overlaps. */
export const checkDeployments: SemanticCheck<DeploymentsPolicy> = (value, report) => {
  for (const [name, rule] of Object.entries(value.environments ?? {})) {
    const at = ["environments", name];
    const nameProblem = globError(name);
    if (nameProblem) report(at, nameProblem);
    if (!rule) continue;
    if (rule.approve) {
      for (const key of RULE_KEYS) {
        if (rule[key] !== undefined) report([...at, key], `"${key}" has no effect with "approve: ${rule.approve}"`);
      }
    }
    for (const key of ["branches", "checks", "after"] as const) {
      rule[key]?.forEach((glob, i) => {
        const problem = globError(glob);
        if (problem) report([...at, key, i], problem);
      });
    }
    if (rule.after?.includes(name)) report([...at, "after"], `environment "${name}" cannot come after itself`);
    checkWindows(rule.windows ?? [], [...at, "windows"], report);
    checkFreezes(rule.freeze ?? [], [...at, "freeze"], report);
  }
};

type Report = Parameters<SemanticCheck<unknown>>[1];

function checkWindows(windows: DeployWindow[], at: (string | number)[], report: Report): void {
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

function checkFreezes(freezes: Freeze[], at: (string | number)[], report: Report): void {
  const parsed: { i: number; from: number; to: number }[] = [];
  freezes.forEach((f, i) => {
    if (f.timezone !== undefined) {
      const problem = zoneError(f.timezone);
      if (problem) {
        report([...at, i, "timezone"], problem);
        return;
      }
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
