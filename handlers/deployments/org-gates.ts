// Organisation gates by repository custom property: the organisation policy says "every repository
// with `tier: critical` gates `production` like this". A deployment must satisfy the gate AND the
// repository's own rule, so a repository file can only add conditions (tighten); what would loosen
// the gate has no effect and is said so. Pure.
import { matchesAny } from "../../src/index.js";
import {
  evaluate,
  matchEnvironment,
  type DeploymentRequest,
  type EvaluateOptions,
  type Evaluation,
  type Facts,
} from "./decide.js";
import { CalendarBudget } from "./recurrence.js";
import type { DeploymentsPolicy, EnvironmentRule } from "./policy.js";

/** Custom property values of one repository (a multi-select property has several). */
export type PropertyValues = Record<string, string | string[]>;

export interface OrgGate {
  /** `tier: critical`, for reasons. */
  label: string;
  /** The gate's environment entry (name or glob) that matched. */
  pattern: string;
  rule: EnvironmentRule;
}

/** The organisation gates applying to `environment` of a repository with `values`. */
export function gatesFor(
  orgPolicy: DeploymentsPolicy | undefined,
  values: PropertyValues,
  environment: string,
): OrgGate[] {
  const gates: OrgGate[] = [];
  for (const entry of orgPolicy?.by_property ?? []) {
    const raw = values[entry.property];
    const have = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    const hit = have.find((v) => entry.values.includes(v));
    if (hit === undefined) continue;
    const match = matchEnvironment({ environments: entry.environments }, environment);
    if (match) gates.push({ label: `${entry.property}: ${hit}`, pattern: match.pattern, rule: match.rule });
  }
  return gates;
}

const RANK = { wait: 0, reject: 1 } as const;

/**
 * What in a repository's rule would loosen an organisation gate, one sentence each. Tighten means:
 * `approve: never`, branches within the gate's, more checks, more `after`, more freezes, more
 * (narrower) windows, `reject` where the gate waits. Loosen is anything else the repository could
 * mean to weaken: `approve: always`, a branch outside the gate's branches, `wait` where the gate
 * rejects. Missing checks, freezes or windows loosen nothing: the gate's own still apply.
 */
export function loosenings(gate: OrgGate, environment: string, repo: EnvironmentRule | undefined): string[] {
  return looseningsByKey(gate, environment, repo).map((l) => l.message);
}

/** `loosenings`, each with the rule key it is about (for FILE:LINE:COL in `steward/config`). */
export function looseningsByKey(
  gate: OrgGate,
  environment: string,
  repo: EnvironmentRule | undefined,
): { key: keyof EnvironmentRule; message: string }[] {
  if (!repo) return [];
  const org = gate.rule;
  const why = `the organisation gates ${environment} for repositories with ${gate.label}`;
  const out: { key: keyof EnvironmentRule; message: string }[] = [];
  if (repo.approve === "always" && org.approve !== "always")
    out.push({ key: "approve", message: `\`approve: always\` for ${environment} has no effect: ${why}` });
  if (org.branches && repo.branches) {
    // A repository glob is within the gate when the gate lists it or one of the gate's globs matches it as a name.
    const outside = repo.branches.filter((b) => !org.branches!.includes(b) && !matchesAny(org.branches!, b));
    if (outside.length)
      out.push({
        key: "branches",
        message: `branches ${outside.map((b) => `\`${b}\``).join(", ")} may not deploy to ${environment} all the same: ${why} (allowed: ${org.branches.map((b) => `\`${b}\``).join(", ")})`,
      });
  }
  for (const key of ["outside_window", "pending_checks"] as const) {
    if (org[key] && repo[key] && RANK[repo[key]] < RANK[org[key]])
      out.push({
        key,
        message: `\`${key}: ${repo[key]}\` for ${environment} has no effect (the gate says ${org[key]}): ${why}`,
      });
  }
  return out;
}

/** Every condition any of the rules needs a fact for (so facts are fetched once for all). */
export function factsRule(rules: readonly EnvironmentRule[]): EnvironmentRule {
  const union = (key: "after" | "branches" | "tags") => [
    ...new Set(rules.flatMap((r) => (r.approve ? [] : (r[key] ?? [])))),
  ];
  // Pinned and unpinned entries alike: a pinned one makes the facts hold every run.
  const checks = rules.flatMap((r) => (r.approve ? [] : (r.checks ?? [])));
  const refs = (key: "branches" | "tags") => (rules.some((r) => !r.approve && r[key]) ? { [key]: union(key) } : {});
  return {
    ...refs("branches"),
    ...refs("tags"),
    checks,
    after: union("after"),
    windows: rules.flatMap((r) => r.windows ?? []),
    freeze: rules.flatMap((r) => r.freeze ?? []),
  };
}

/**
 * The repository's rule and every organisation gate, all of which must let the deployment through:
 * any rejection rejects, else any wait waits (until the latest opening), else it is approved.
 */
export function evaluateGated(
  policy: DeploymentsPolicy | undefined,
  gates: readonly OrgGate[],
  request: DeploymentRequest,
  facts: Facts,
  now: Date,
  options: EvaluateOptions = {},
): Evaluation {
  // One budget for every rule of the decision: gates do not multiply what calendars may cost.
  const opts = { ...options, budget: options.budget ?? new CalendarBudget() };
  const own = evaluate(policy, request, facts, now, opts);
  if (gates.length === 0) return own;
  const repoRule = matchEnvironment(policy, request.environment)?.rule;
  const notes = gates.flatMap((g) => loosenings(g, request.environment, repoRule));
  const parts: Evaluation[] = [];
  // `approve: always` would skip every condition of the repository's own rule; it cannot skip the gate's.
  if (own.decision !== "none" && !(repoRule?.approve === "always")) parts.push(own);
  for (const gate of gates) {
    const e = evaluate({ environments: { [gate.pattern]: gate.rule } }, request, facts, now, opts);
    parts.push({ ...e, reasons: e.reasons.map((r) => `organisation gate (${gate.label}): ${r}`) });
  }
  const matched = own.matched ?? gates[0]!.pattern;
  const rejected = parts.filter((p) => p.decision === "reject");
  if (rejected.length)
    return { decision: "reject", matched, reasons: [...rejected.flatMap((p) => p.reasons), ...notes] };
  const waiting = parts.filter((p) => p.decision === "wait");
  if (waiting.length) {
    const until = waiting.map((p) => p.waitUntil?.getTime()).filter((t): t is number => t !== undefined);
    const giveUp = waiting.map((p) => p.giveUpAt!.getTime());
    const recheck = waiting.filter((p) => p.recheckOn).map((p) => p.recheckOn!);
    return {
      decision: "wait",
      matched,
      reasons: [...waiting.flatMap((p) => p.reasons), ...notes],
      giveUpAt: new Date(Math.min(...giveUp)),
      ...(until.length ? { waitUntil: new Date(Math.max(...until)) } : {}),
      ...(recheck.length
        ? {
            recheckOn: {
              checks: [...new Set(recheck.flatMap((r) => r.checks))],
              environments: [...new Set(recheck.flatMap((r) => r.environments))],
            },
          }
        : {}),
    };
  }
  return { decision: "approve", matched, reasons: [...parts.flatMap((p) => p.reasons), ...notes] };
}

/**
 * What `steward/config` says about a repository's deployments policy under the organisation's
 * gates for its property values: every attempt to loosen a gate, and a `by_property` of its own
 * (read from the organisation policy only), each at the key's path.
 */
export function gateFindings(
  orgPolicy: DeploymentsPolicy | undefined,
  repoPolicy: DeploymentsPolicy | undefined,
  values: PropertyValues,
): { path: (string | number)[]; message: string }[] {
  const out: { path: (string | number)[]; message: string }[] = [];
  if (repoPolicy?.by_property?.length) {
    out.push({
      path: ["deployments", "by_property"],
      message: "by_property is read from the organisation policy (admin repository) only: here it has no effect",
    });
  }
  for (const entry of orgPolicy?.by_property ?? []) {
    for (const environment of Object.keys(entry.environments ?? {})) {
      for (const gate of gatesFor({ environments: {}, by_property: [entry] }, values, environment)) {
        const own = matchEnvironment(repoPolicy, environment);
        if (!own) continue;
        for (const l of looseningsByKey(gate, environment, own.rule))
          out.push({ path: ["deployments", "environments", own.pattern, l.key], message: l.message });
      }
    }
  }
  return out;
}
