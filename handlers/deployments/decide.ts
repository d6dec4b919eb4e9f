// The decision: a pure function of (policy, request, facts, now). No I/O here; the handler
// fetches the facts, calls `evaluate`, and carries the answer out.
import { matchesAny } from "../../src/index.js";
import {
  activeFreeze,
  describeWindow,
  formatInstant,
  nextOpening,
  windowOpen,
  type FreezeSpec,
  type WindowSpec,
} from "./calendar.js";
import { checkEntry, namesIt, type DeploymentsPolicy, type EnvironmentRule } from "./policy.js";
import { buildTimetable, type CalendarTexts } from "./timetable.js";
import { CalendarBudget } from "./recurrence.js";

/** GitHub abandons a waiting protection rule after 30 days; Steward answers a day before that. */
export const GIVE_UP_AFTER_MS = 29 * 86_400_000;

export interface DeploymentRequest {
  environment: string;
  /** `refs/heads/main`, `refs/tags/v1.2.0`, or a bare branch/tag name; undefined when unknown. */
  ref: string | undefined;
  sha: string;
  /** When the deployment started waiting (GitHub's 30-day limit counts from here). */
  requestedAt: Date;
  /**
   * `owner/name` of the fork whose code the run would deploy (a fork pull request's run); absent
   * for the repository's own code. A fork can name its branch `main`, so the ref proves nothing.
   */
  fork?: string;
}

export interface CheckRunFact {
  name: string;
  status: string;
  conclusion: string | null;
  /** Slug of the GitHub App that created the run (`github-actions` for workflow jobs); unknown when absent. */
  app?: string;
  id?: number;
  /** Where a person can see the run. */
  url?: string;
  /** Orders runs of one name and app: the newest counts. */
  startedAt?: string | null;
}

/** Where a sha stands in an environment listed under `after`. */
export type DeployedState = "success" | "failure" | "pending" | "missing";

/**
 * What the repository says about the ref being deployed, read only for a rule with `branches` or
 * `tags` whose globs match its name: whether the sha is on the branch of that name (its tip, or
 * reachable from the tip), or is the commit the tag of that name points at.
 */
export interface RefFacts {
  branch?: { name: string; state: "tip" | "reachable" | "off" | "missing"; status?: string };
  tag?: { name: string; state: "at" | "elsewhere" | "missing" };
}

export interface Facts {
  /** Where the sha stands on the branch or tag the ref names (rules with `branches` or `tags`). */
  ref?: RefFacts;
  /**
   * Check runs on the sha: the latest per name (`filter=latest`), or every run (`filter=all`) when
   * an entry is pinned to apps, so another app's newer run of the name cannot hide the pinned one.
   */
  checkRuns: CheckRunFact[];
  /** `checkRuns` holds every run (`filter=all`), not only the latest per name. */
  allCheckRuns?: boolean;
  /** State of the sha in each environment of `after`. */
  deployedTo: Record<string, DeployedState>;
  /** iCalendar files the rule's windows and freezes name, read from the admin repository. */
  calendars?: CalendarTexts;
}

export type Decision = "approve" | "reject" | "wait" | "none";

export interface Evaluation {
  /** `none`: no entry matches the environment, so Steward leaves it to GitHub's own rules. */
  decision: Decision;
  /** Plain-language reasons, most important first. */
  reasons: string[];
  /** The environment entry that applied (name or glob). */
  matched?: string;
  /** For `wait` on a window or freeze: when the deployment may go ahead. */
  waitUntil?: Date;
  /** For `wait` on checks or earlier deployments: what to re-evaluate on. */
  recheckOn?: { checks: string[]; environments: string[] };
  /** For `wait`: when Steward rejects rather than let GitHub time out. */
  giveUpAt?: Date;
}

/** The first entry (in file order) whose name or glob matches the environment, case-insensitively like GitHub. */
export function matchEnvironment(
  policy: DeploymentsPolicy | undefined,
  environment: string,
): { pattern: string; rule: EnvironmentRule } | undefined {
  const wanted = environment.toLowerCase();
  for (const [pattern, rule] of Object.entries(policy?.environments ?? {})) {
    const p = pattern.toLowerCase();
    if (namesIt(p, wanted)) return { pattern, rule: rule ?? {} };
  }
  return undefined;
}

/** `refs/heads/main` -> `main`, `refs/tags/v1` -> `v1`. */
export function refName(ref: string): string {
  return ref.replace(/^refs\/(heads|tags)\//, "");
}

/** Whether a rule's `branches` or `tags` name the ref being deployed (a bare name is either). */
export function refNamedBy(rule: EnvironmentRule, ref: string): { branch: boolean; tag: boolean } {
  const name = refName(ref);
  return {
    branch:
      !ref.startsWith("refs/tags/") &&
      !!rule.branches &&
      (matchesAny(rule.branches, name) || matchesAny(rule.branches, ref)),
    tag: !ref.startsWith("refs/heads/") && !!rule.tags && matchesAny(rule.tags, name),
  };
}

const short = (sha: string) => sha.slice(0, 7);
const quoted = (names: readonly string[]) => names.map((n) => `\`${n}\``).join(", ");

/** Findings of one policy key: what passed, what blocks for good, what may still change. */
interface Findings {
  passed: string[];
  blocking: string[];
  waiting: string[];
}

/**
 * `branches`: the deployed commit is on an allowed branch (its tip or reachable from it), not
 * merely something named like one; a tag is never a branch. `tags`: the ref is an allowed tag and
 * the tag points at the deployed commit. Either passes; a failure says which check failed.
 */
function checkRef(rule: EnvironmentRule, request: DeploymentRequest, facts: Facts, env: string, out: Findings): void {
  if (!rule.branches && !rule.tags) return;
  const allowed = [...(rule.branches ?? []), ...(rule.tags ?? []).map((t) => `tags/${t}`)];
  if (!request.ref) {
    out.blocking.push(`the ref being deployed is unknown, and only ${quoted(allowed)} may deploy to ${env}`);
    return;
  }
  const sha = short(request.sha);
  const isTag = /^refs\/tags\//.test(request.ref);
  const name = refName(request.ref);
  const { branch: branchNamed, tag: tagNamed } = refNamedBy(rule, request.ref);
  const branch = facts.ref?.branch?.name === name ? facts.ref.branch : undefined;
  const tag = facts.ref?.tag?.name === name ? facts.ref.tag : undefined;
  if (branchNamed && (branch?.state === "tip" || branch?.state === "reachable")) {
    out.passed.push(`\`${name}\` may deploy to ${env}`);
    return;
  }
  if (tagNamed && tag?.state === "at") {
    out.passed.push(`tag \`${name}\` may deploy to ${env}`);
    return;
  }
  const failures: string[] = [];
  if (branchNamed) {
    const only = `only commits on ${quoted(rule.branches!)} may deploy to ${env}`;
    if (!branch) failures.push(`branch check failed: whether ${sha} is on branch \`${name}\` is not known; ${only}`);
    else if (branch.state === "missing")
      failures.push(
        `branch check failed: there is no branch \`${name}\` (a tag of that name is not a branch); ${only}`,
      );
    else
      failures.push(
        `branch check failed: ${sha} is not on branch \`${name}\` (neither its tip nor reachable from it: ${branch.status ?? "not related"}); ${only}`,
      );
  }
  if (tagNamed) {
    const only = `only tags ${quoted(rule.tags!)} may deploy to ${env}`;
    if (!tag) failures.push(`tag check failed: whether tag \`${name}\` points at ${sha} is not known; ${only}`);
    else if (tag.state === "missing") failures.push(`tag check failed: there is no tag \`${name}\`; ${only}`);
    else failures.push(`tag check failed: tag \`${name}\` does not point at ${sha}; ${only}`);
  }
  if (failures.length === 0) {
    if (isTag && rule.branches && !rule.tags)
      failures.push(
        `branch check failed: \`${request.ref}\` is a tag, and a tag is not a branch; only branches ${quoted(rule.branches)} may deploy to ${env}`,
      );
    else failures.push(`\`${name}\` may not deploy to ${env} (allowed: ${quoted(allowed)})`);
  }
  // A name both an allowed branch and an allowed tag fails only when both checks fail.
  out.blocking.push(...failures);
}

/** The newest run of each name (and, with `byApp`, of each app) among `runs`. */
function latest(runs: readonly CheckRunFact[], byApp: boolean): CheckRunFact[] {
  const best = new Map<string, CheckRunFact>();
  for (const r of runs) {
    const key = byApp ? `${r.app ?? ""}\n${r.name}` : r.name;
    const cur = best.get(key);
    const newer =
      !cur ||
      (r.startedAt ?? "") > (cur.startedAt ?? "") ||
      ((r.startedAt ?? "") === (cur.startedAt ?? "") && (r.id ?? 0) > (cur.id ?? 0));
    if (newer) best.set(key, r);
  }
  return runs.filter((r) => best.get(byApp ? `${r.app ?? ""}\n${r.name}` : r.name) === r);
}

/**
 * `checks`: every entry's runs succeeded. A pinned entry counts only runs by its apps (by slug): a
 * run of the same name by another app neither satisfies nor blocks it, and the answer says so.
 */
function checkChecks(rule: EnvironmentRule, request: DeploymentRequest, facts: Facts, out: Findings): string[] {
  const pendingNames: string[] = [];
  if (!rule.checks?.length) return pendingNames;
  const sha = short(request.sha);
  const succeeded: string[] = [];
  const pendingReasons: string[] = [];
  const label = (name: string, apps: readonly string[] | undefined) =>
    apps ? `\`${name}\` (${apps.join(", ")})` : `\`${name}\``;
  for (const entry of rule.checks) {
    const { name: wanted, apps } = checkEntry(entry);
    const named = facts.checkRuns.filter((r) => namesIt(wanted, r.name));
    const runs = apps
      ? latest(
          named.filter((r) => r.app !== undefined && apps.includes(r.app)),
          true,
        )
      : facts.allCheckRuns
        ? latest(named, false)
        : named;
    const from = apps ? ` from ${apps.join(" or ")}` : "";
    if (runs.length === 0) {
      pendingNames.push(wanted);
      const others = apps ? [...new Set(named.map((r) => r.app ?? "an unknown app"))] : [];
      const ignored = others.length
        ? ` (${others.length > 1 ? "runs" : "a run"} of that name from ${quoted(others)} ${others.length > 1 ? "are" : "is"} not counted)`
        : "";
      pendingReasons.push(`check \`${wanted}\` has not started on ${sha}${from}${ignored}`);
      continue;
    }
    const bad = runs.filter((r) => r.status === "completed" && r.conclusion !== "success");
    const running = runs.filter((r) => r.status !== "completed");
    for (const run of bad) {
      const what = label(run.name, apps ? [run.app!] : undefined);
      out.blocking.push(
        run.conclusion === "failure"
          ? `check ${what} failed on ${sha}`
          : `check ${what} concluded ${run.conclusion ?? "without a conclusion"} on ${sha}`,
      );
    }
    for (const run of running) {
      pendingNames.push(run.name);
      pendingReasons.push(
        `check ${label(run.name, apps ? [run.app!] : undefined)} is ${run.status === "queued" ? "queued" : "still running"} on ${sha}`,
      );
    }
    if (bad.length === 0 && running.length === 0)
      succeeded.push(...runs.map((r) => label(r.name, apps ? [r.app!] : undefined)));
  }
  if (succeeded.length)
    out.passed.push(`${succeeded.length > 1 ? "checks" : "check"} ${succeeded.join(", ")} succeeded on ${sha}`);
  if (rule.pending_checks === "reject") out.blocking.push(...pendingReasons);
  else out.waiting.push(...pendingReasons);
  return pendingNames;
}

function checkAfter(rule: EnvironmentRule, request: DeploymentRequest, facts: Facts, out: Findings): string[] {
  const pendingEnvs: string[] = [];
  const sha = short(request.sha);
  for (const env of rule.after ?? []) {
    const state = facts.deployedTo[env] ?? "missing";
    if (state === "success") out.passed.push(`${sha} deployed to ${env} first`);
    else if (state === "failure") out.blocking.push(`the deployment of ${sha} to ${env} failed`);
    else if (state === "missing") out.blocking.push(`${sha} has not been deployed to ${env}`);
    else {
      pendingEnvs.push(env);
      const reason = `the deployment of ${sha} to ${env} has not finished`;
      (rule.pending_checks === "reject" ? out.blocking : out.waiting).push(reason);
    }
  }
  return pendingEnvs;
}

/**
 * Windows and freezes (weekly, dated, recurring, from calendars); returns when the deployment may
 * go ahead if it must wait for time. `unreadable` is set when a calendar could not be used.
 * `withheld`: why the policy's words must not be shown here; then a freeze's reason and the
 * windows' definitions are left out (when the deployment may go ahead still is said).
 */
function checkTime(
  rule: EnvironmentRule,
  facts: Facts,
  now: number,
  out: Findings,
  withheld?: string,
  budget?: CalendarBudget,
): { opening?: number; unreadable: boolean } {
  if (!rule.windows?.length && !rule.freeze?.length) return { unreadable: false };
  const { windows, freezes, problems, knownUntil } = buildTimetable(rule, facts.calendars ?? {}, now, budget);
  if (problems.length) {
    // Without the calendar, or a rule Steward could not evaluate within its bounds, it cannot tell
    // whether this is a holiday: it waits and looks again (and never approves on a guess).
    out.waiting.push(...problems);
    return { unreadable: true };
  }
  return { ...checkTimetable(rule, windows, freezes, now, out, withheld, knownUntil), unreadable: false };
}

function checkTimetable(
  rule: EnvironmentRule,
  windows: readonly WindowSpec[],
  freezes: readonly FreezeSpec[],
  now: number,
  out: Findings,
  withheld?: string,
  knownUntil = Infinity,
): { opening?: number } {
  const windowsText = (list: readonly WindowSpec[]) =>
    withheld ? `(its definition is withheld: ${withheld})` : list.map(describeWindow).join(" or ");
  if (windows.length === 0 && freezes.length === 0) return {};
  const freeze = activeFreeze(freezes, now);
  const inWindow = windows.length === 0 || windows.some((w) => windowOpen(w, now));
  if (!freeze && inWindow) {
    if (windows.length)
      out.passed.push(`inside deploy window ${windowsText(windows.filter((w) => windowOpen(w, now)))}`);
    // Checked and passed: said, so an approval never reads as if the policy set no conditions.
    const entries = rule.freeze?.length ?? 0;
    if (entries)
      out.passed.push(`no deploy freeze in effect (${entries} freeze ${entries === 1 ? "entry" : "entries"} checked)`);
    return {};
  }
  const yearAhead = now + 366 * 86_400_000;
  // Dense rules are known only so far ahead: past that, nothing is decided (Steward looks again then).
  const partial = knownUntil < yearAhead;
  const opening = nextOpening(windows, freezes, now, Math.min(yearAhead, knownUntil));
  const parts: string[] = [];
  if (freeze) {
    const zone = freeze.freeze.timezone ?? "UTC";
    const why = freeze.freeze.reason
      ? withheld
        ? ` (its reason is withheld: ${withheld})`
        : ` (${freeze.freeze.reason})`
      : "";
    parts.push(`deploy freeze until ${formatInstant(freeze.to, zone)}${why}`);
  }
  if (!inWindow) parts.push(`outside deploy window ${windowsText(windows)}`);
  if (opening === undefined && partial)
    parts.push(
      `no deploy window opens before ${formatInstant(knownUntil)}, as far as Steward expands these rules; it looks again then`,
    );
  else if (opening === undefined) parts.push("no deploy window opens within a year");
  else if (windows.length) {
    const zone = windows.find((w) => windowOpen(w, opening))?.timezone ?? windows[0]?.timezone ?? "UTC";
    parts.push(`next window opens ${formatInstant(opening, zone)}`);
  }
  const reason = parts.join("; ");
  if (rule.outside_window === "reject" || (opening === undefined && !partial)) {
    out.blocking.push(reason);
    return {};
  }
  out.waiting.push(reason);
  return { opening: opening ?? knownUntil };
}

export interface EvaluateOptions {
  /** Why the policy's own words must not appear in the answer, if so. */
  withheld?: string;
  /** What calendars may cost this decision (shared by every rule it evaluates); a fresh one when absent. */
  budget?: CalendarBudget;
}

/**
 * Decide whether the deployment may proceed. `approve` and `reject` are final; `wait` says until
 * when (`waitUntil`) and on what (`recheckOn`) to evaluate again, and by when to give up.
 */
export function evaluate(
  policy: DeploymentsPolicy | undefined,
  request: DeploymentRequest,
  facts: Facts,
  now: Date,
  opts: EvaluateOptions = {},
): Evaluation {
  const match = matchEnvironment(policy, request.environment);
  if (!match)
    return { decision: "none", reasons: [`no deployments policy matches environment ${request.environment}`] };
  const { pattern, rule } = match;
  const env = request.environment;
  // First, before `approve: always`: no policy may hand a fork's code the base's environment.
  // Rejecting is a refusal, never a grant, so it is the one answer a fork's run gets.
  if (request.fork) {
    return {
      decision: "reject",
      matched: pattern,
      reasons: [`the code comes from fork ${request.fork}: Steward never approves deploying a fork's code`],
    };
  }
  if (rule.approve === "always")
    return { decision: "approve", matched: pattern, reasons: [`every deployment to ${env} is approved by policy`] };
  if (rule.approve === "never")
    return { decision: "reject", matched: pattern, reasons: [`no deployment to ${env} is approved by policy`] };

  const out: Findings = { passed: [], blocking: [], waiting: [] };
  checkRef(rule, request, facts, env, out);
  const pendingChecks = checkChecks(rule, request, facts, out);
  const pendingEnvs = checkAfter(rule, request, facts, out);
  const time = checkTime(rule, facts, now.getTime(), out, opts.withheld, opts.budget);
  const opening = time.opening;

  if (out.blocking.length) return { decision: "reject", matched: pattern, reasons: [...out.blocking, ...out.waiting] };
  if (out.waiting.length) {
    const giveUpAt = request.requestedAt.getTime() + GIVE_UP_AFTER_MS;
    if (now.getTime() >= giveUpAt || (opening !== undefined && opening > giveUpAt)) {
      const since = formatInstant(request.requestedAt.getTime());
      return {
        decision: "reject",
        matched: pattern,
        reasons: [
          ...out.waiting,
          `waiting since ${since} would pass the 30 days after which GitHub abandons the deployment`,
        ],
      };
    }
    const evaluation: Evaluation = {
      decision: "wait",
      matched: pattern,
      reasons: out.waiting,
      giveUpAt: new Date(giveUpAt),
    };
    if (opening !== undefined) evaluation.waitUntil = new Date(opening);
    if (pendingChecks.length || pendingEnvs.length || time.unreadable)
      evaluation.recheckOn = { checks: pendingChecks, environments: pendingEnvs };
    return evaluation;
  }
  return {
    decision: "approve",
    matched: pattern,
    reasons: out.passed.length ? out.passed : [`the policy for ${env} sets no conditions`],
  };
}
