// The `rerun` section of `.github/steward.yml`: which failed workflow runs Steward re-runs,
// how often, and which failures count as transient.
import {
  type PolicySection,
  globError,
  parseDuration,
  textMatcherError,
  didYouMean,
  suggestionNote,
  ACT_MODE_SCHEMA,
  type ActMode,
} from "../../src/index.js";

export type RuleConclusion = "failure" | "timed_out" | "cancelled";
/** `jobs`: re-run only the transient failed jobs, one request each; the others stay failed. */
export type RerunMode = "failed_jobs" | "workflow" | "jobs";

export interface RerunRule {
  /** Job name globs. */
  jobs?: string[];
  /** Globs on the names of the job's failed steps (one failed step must match). */
  steps?: string[];
  /** Job conclusions the rule covers; default failure and timed_out. */
  conclusions?: RuleConclusion[];
  /** Substrings or /regex/flags searched in the job's log (one must match). */
  log?: string[];
  /** true: the job failed without a failed step (its runner went away); false: it has one. */
  runner_lost?: boolean;
  /** `report`: a re-run this rule takes part in is decided, recorded and reported, never requested. */
  mode?: ActMode;
}

export interface RerunPolicy {
  enabled: boolean;
  /** Workflow names or paths (globs); absent means every workflow. */
  workflows?: string[];
  /** Globs on the run's head branch; absent means every branch. */
  branches?: string[];
  /** Triggering events; absent means every event except `schedule`. */
  events?: string[];
  /**
   * Re-run runs of pull requests from forks too. Off by default: a fork's code decides what its
   * logs say, so it could print a transient-looking error and have the base repository re-run it
   * again and again with the base's Actions minutes.
   */
  forks: boolean;
  /** Attempts counting the first run. */
  max_attempts: number;
  /** How to re-run; `report`: decide and report what `failed_jobs` would do, re-run nothing. */
  mode: RerunMode | "report";
  /** More failed jobs than this is a real breakage. */
  max_failed_jobs: number;
  /** Wait before re-running: `30s`, `5m`, `1h`, or seconds. */
  delay: string | number;
  /** Re-runs Steward may request in one repository per UTC day; absent: no daily limit. */
  daily_budget?: number;
  /**
   * A job that failed on a commit but passed on the commits before and after it on the same branch
   * (green, red, green) is a flake even without a matching rule: re-run it and record it.
   */
  flake_pattern: boolean;
  /** Accepted so that existing policy files stay valid; logs are read with the run's decision. */
  read_ahead: boolean;
  /** First match wins; `[]` treats every failure in scope as transient. */
  rules: RerunRule[];
}

export const DEFAULT_RULE_CONCLUSIONS: readonly RuleConclusion[] = ["failure", "timed_out"];
/** GitHub lets one run be re-run at most 50 times ("Limits in GitHub Actions": Re-run, 50 re-runs). */
export const GITHUB_MAX_RERUNS = 50;
/** So the last attempt of a run is 51 (the first run and 50 re-runs; the sandbox hub refuses past it too). */
export const GITHUB_MAX_ATTEMPTS = GITHUB_MAX_RERUNS + 1;
/** Longer delays than this are almost certainly a unit mistake (`30h` for `30s`). */
export const MAX_DELAY_MS = 24 * 3_600_000;

/** Events that trigger workflow runs; another name in `events` is most likely a typo. */
export const WORKFLOW_EVENTS: readonly string[] = [
  "branch_protection_rule",
  "check_run",
  "check_suite",
  "create",
  "delete",
  "deployment",
  "deployment_status",
  "discussion",
  "discussion_comment",
  "dynamic",
  "fork",
  "gollum",
  "issue_comment",
  "issues",
  "label",
  "merge_group",
  "milestone",
  "page_build",
  "public",
  "pull_request",
  "pull_request_review",
  "pull_request_review_comment",
  "pull_request_target",
  "push",
  "registry_package",
  "release",
  "repository_dispatch",
  "schedule",
  "status",
  "watch",
  "workflow_call",
  "workflow_dispatch",
  "workflow_run",
];

const stringList = { type: "array", items: { type: "string" } } as const;

const ruleSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    jobs: stringList,
    steps: stringList,
    conclusions: {
      type: "array",
      minItems: 1,
      items: { type: "string", enum: ["failure", "timed_out", "cancelled"] },
    },
    log: stringList,
    runner_lost: { type: "boolean" },
    mode: ACT_MODE_SCHEMA,
  },
} as const;

export const rerunPolicy: PolicySection<RerunPolicy> = {
  key: "rerun",
  // On where the section is absent: its own default `enabled: false` keeps it off; the section still validates when given.
  enabledByDefault: true,
  schema: {
    type: "object",
    additionalProperties: false,
    properties: {
      enabled: { type: "boolean" },
      workflows: stringList,
      branches: stringList,
      events: stringList,
      forks: { type: "boolean" },
      max_attempts: { type: "integer", minimum: 1, maximum: GITHUB_MAX_ATTEMPTS },
      mode: { type: "string", enum: ["failed_jobs", "workflow", "jobs", "report"] },
      daily_budget: { type: "integer", minimum: 0 },
      flake_pattern: { type: "boolean" },
      read_ahead: { type: "boolean" },
      max_failed_jobs: { type: "integer", minimum: 1 },
      delay: { type: ["string", "number"] },
      rules: { type: "array", items: ruleSchema },
    },
  },
  defaults: {
    enabled: false,
    forks: false,
    flake_pattern: false,
    read_ahead: false,
    max_attempts: 2,
    mode: "failed_jobs",
    max_failed_jobs: 5,
    delay: "30s",
    rules: [],
  },
  check(value, report) {
    for (const key of ["workflows", "branches"] as const) {
      const globs = value[key];
      if (!globs) continue;
      if (globs.length === 0) report([key], `empty "${key}" list: no run is in scope`, "warning");
      globs.forEach((g, i) => {
        const err = globError(g);
        if (err) report([key, i], err);
      });
    }
    if (value.events?.length === 0) report(["events"], `empty "events" list: no run is in scope`, "warning");
    value.events?.forEach((event, i) => {
      if (!WORKFLOW_EVENTS.includes(event)) {
        report(
          ["events", i],
          `"${event}" is not an event that triggers workflow runs${suggestionNote(didYouMean(event, WORKFLOW_EVENTS))}`,
          "warning",
        );
      }
    });

    const delay = parseDuration(value.delay);
    if (delay === undefined) report(["delay"], `invalid duration "${value.delay}" (use 30s, 5m, 1h)`);
    else if (delay > MAX_DELAY_MS) report(["delay"], `delay "${value.delay}" is longer than 24h`);

    value.rules.forEach((rule, i) =>
      checkRule(rule, (path, message, severity) => report(["rules", i, ...path], message, severity)),
    );
  },
};

function checkRule(
  rule: RerunRule,
  report: (path: (string | number)[], message: string, severity?: "error" | "warning") => void,
): void {
  for (const key of ["jobs", "steps"] as const) {
    rule[key]?.forEach((g, i) => {
      const err = globError(g);
      if (err) report([key, i], err);
    });
  }
  rule.log?.forEach((spec, i) => {
    if (spec.length === 0) report(["log", i], "empty log pattern matches every log");
    const err = textMatcherError(spec);
    if (err) report(["log", i], err);
  });
  if (rule.runner_lost === true && rule.steps?.length) {
    report(["runner_lost"], 'runner_lost: true means no step failed, so the rule\'s "steps" can never match');
  }
  const conditions = ["jobs", "steps", "log", "runner_lost", "conclusions"].filter((k) => k in rule);
  if (conditions.length === 0) report([], "rule has no condition: every failure matches it", "warning");
}

/** A policy whose `mode` says how to re-run: what the pure decision is given. */
export type ActingRerunPolicy = Omit<RerunPolicy, "mode"> & { mode: RerunMode };

/**
 * The policy the decision is made with, and why it is only reported, if so: `mode: report` on the
 * section reports what `failed_jobs` would do (the re-run mode it stands in for).
 */
export function actingPolicy(policy: RerunPolicy): { policy: ActingRerunPolicy; report: string | undefined } {
  if (policy.mode === "report") return { policy: { ...policy, mode: "failed_jobs" }, report: "rerun.mode: report" };
  return { policy: { ...policy, mode: policy.mode }, report: undefined };
}

/** The policy's delay in milliseconds (validated, so always parsable; 0 when it is not). */
export function delayMs(policy: Pick<RerunPolicy, "delay">): number {
  return parseDuration(policy.delay) ?? 0;
}
