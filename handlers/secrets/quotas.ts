// GitHub's limits on Actions secrets and variables, checked against a plan before it is applied, so
// a plan warns with the counts instead of a write failing half-way. Pure.
//
// The figures and words are GitHub's (checked 2026-11-24):
// - Secrets reference, "Limits for secrets": "You can store up to 1,000 organization secrets, 100
//   repository secrets, and 100 environment secrets." "Secrets are limited to 48 KB in size."
// - Variables reference, "Limits for configuration variables": "Individual variables are limited to
//   48 KB in size. You can store up to 1,000 organization variables, 500 variables per repository, and
//   100 variables per environment. The total combined size limit for organization and repository
//   variables is 256 KB per workflow run." (GitHub Enterprise Server documents 10 MB for the latter.)
import type { PlanRow } from "./plan.js";
import { scopeKey, scopeLabel, type ActualTarget, type Kind, type Scope } from "./targets.js";

export const LIMITS: Record<Kind, Record<Scope["level"], number>> = {
  secret: { org: 1000, repo: 100, env: 100 },
  variable: { org: 1000, repo: 500, env: 100 },
};
/** A count limit in GitHub's own words. */
const LIMIT_WORDS: Record<Kind, Record<Scope["level"], string>> = {
  secret: { org: "1,000 organization secrets", repo: "100 repository secrets", env: "100 environment secrets" },
  variable: {
    org: "1,000 organization variables",
    repo: "500 variables per repository",
    env: "100 variables per environment",
  },
};
export const MAX_VALUE_BYTES = 48 * 1024;
/** Organisation and repository variables a workflow run can use, together. */
export const MAX_RUN_VARIABLES_BYTES = 256 * 1024;
/** Warn once a scope would be this full. */
export const NEAR_FRACTION = 0.9;

const number = (n: number) => n.toLocaleString("en-US");
const plural = (kind: Kind, n: number) => `${number(n)} ${kind}${n === 1 ? "" : "s"}`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** What a plan leaves at each target: its scope, and the byte size of a variable's value when known. */
interface After {
  kind: Kind;
  scope: Scope;
  bytes: number | undefined;
  visibility?: ActualTarget["visibility"];
  selectedRepositoryIds?: readonly number[];
}

function afterPlan(
  actual: ReadonlyMap<string, ActualTarget>,
  rows: readonly PlanRow[],
  sizes: ReadonlyMap<string, number>,
): Map<string, After> {
  const after = new Map<string, After>();
  for (const a of actual.values()) {
    after.set(a.key, {
      kind: a.kind,
      scope: a.scope,
      bytes: a.value === undefined ? undefined : Buffer.byteLength(a.value),
      ...(a.visibility ? { visibility: a.visibility } : {}),
      ...(a.selectedRepositoryIds ? { selectedRepositoryIds: a.selectedRepositoryIds } : {}),
    });
  }
  for (const r of rows) {
    if (r.action === "delete") after.delete(r.key);
    if (r.action !== "create" && r.action !== "update") continue;
    const was = after.get(r.key);
    const d = r.desired;
    after.set(r.key, {
      kind: r.kind,
      scope: r.scope,
      bytes: r.changes.includes("value") || !was ? sizes.get(r.key) : was.bytes,
      ...((d?.visibility ?? was?.visibility) ? { visibility: d?.visibility ?? was?.visibility } : {}),
      ...((d?.selectedRepositoryIds ?? was?.selectedRepositoryIds)
        ? { selectedRepositoryIds: d?.selectedRepositoryIds ?? was?.selectedRepositoryIds }
        : {}),
    });
  }
  return after;
}

const PAST_IT_FAILS = "the writes past it will fail";
const ITS_WRITE_FAILS = "its write will fail";

/** Whether a warning says writes of the plan will fail (over a count or size limit), not just near one. */
export function predictsFailedWrites(warning: string): boolean {
  return warning.endsWith(PAST_IT_FAILS) || warning.endsWith(ITS_WRITE_FAILS);
}

function countWarnings(after: ReadonlyMap<string, After>): string[] {
  const counts = new Map<string, { kind: Kind; scope: Scope; n: number }>();
  for (const t of after.values()) {
    const id = `${t.kind}/${scopeKey(t.scope)}`;
    const c = counts.get(id) ?? { kind: t.kind, scope: t.scope, n: 0 };
    c.n++;
    counts.set(id, c);
  }
  const warnings: string[] = [];
  for (const { kind, scope, n } of counts.values()) {
    const limit = LIMITS[kind][scope.level];
    const words = LIMIT_WORDS[kind][scope.level];
    if (n > limit)
      warnings.push(
        `${scopeLabel(scope)} would have ${plural(kind, n)}, over GitHub's limit of ${words}: ${PAST_IT_FAILS}`,
      );
    else if (n >= Math.ceil(limit * NEAR_FRACTION))
      warnings.push(`${scopeLabel(scope)} would have ${plural(kind, n)}, near GitHub's limit of ${words}`);
  }
  return warnings;
}

function sizeWarnings(rows: readonly PlanRow[], sizes: ReadonlyMap<string, number>): string[] {
  const warnings: string[] = [];
  for (const r of rows) {
    if ((r.action !== "create" && r.action !== "update") || !r.changes.includes("value")) continue;
    const size = sizes.get(r.key) ?? 0;
    if (size > MAX_VALUE_BYTES)
      warnings.push(
        `${r.kind} ${r.name} in ${scopeLabel(r.scope)} is ${kb(size)}, over GitHub's limit of 48 KB per ${r.kind}: ${ITS_WRITE_FAILS}`,
      );
  }
  return warnings;
}

/**
 * The 256 KB a workflow run can use of organisation and repository variables together: per
 * repository with variables, its own plus the organisation's it can see (visibility `all` and
 * `private` are counted for every repository, since which repositories are private is not read
 * here; `selected` where its list names the repository). Past it GitHub leaves out the variables
 * over the limit, alphabetically: a run would miss some without any write failing.
 */
function runSizeWarnings(after: ReadonlyMap<string, After>, repoIds: ReadonlyMap<string, number>): string[] {
  const variables = [...after.values()].filter((t) => t.kind === "variable" && t.scope.level !== "env");
  const org = variables.filter((t) => t.scope.level === "org");
  const orgBytesFor = (repo: string | undefined) => {
    const id = repo === undefined ? undefined : repoIds.get(repo.toLowerCase());
    return org
      .filter((t) => t.visibility !== "selected" || (id !== undefined && t.selectedRepositoryIds?.includes(id)))
      .reduce((sum, t) => sum + (t.bytes ?? 0), 0);
  };
  const repos = new Map<string, { repo: string; bytes: number }>();
  for (const t of variables) {
    if (t.scope.level !== "repo") continue;
    const key = t.scope.repo.toLowerCase();
    const r = repos.get(key) ?? { repo: t.scope.repo, bytes: 0 };
    r.bytes += t.bytes ?? 0;
    repos.set(key, r);
  }
  const warnings: string[] = [];
  const over = `over GitHub's limit of 256 KB for organization and repository variables per workflow run: a run would not get the variables past it (alphabetically)`;
  for (const { repo, bytes } of repos.values()) {
    const orgBytes = orgBytesFor(repo);
    if (bytes + orgBytes > MAX_RUN_VARIABLES_BYTES)
      warnings.push(
        `repo ${repo} would have ${kb(bytes)} of repository variables and ${kb(orgBytes)} of organization variables it can use, ${kb(bytes + orgBytes)} together, ${over}`,
      );
  }
  const shared = orgBytesFor(undefined);
  if (shared > MAX_RUN_VARIABLES_BYTES)
    warnings.push(`org would have ${kb(shared)} of organization variables shared with every repository, ${over}`);
  return warnings;
}

/**
 * Warnings for scopes a plan would take past or near GitHub's count limits, for values over the
 * size limit, and for repositories whose workflow runs would get more than 256 KB of variables.
 * `actual` holds every target of each scope read; `sizes` the byte length of each value to be
 * written, by target key (values themselves never reach this module); `repoIds` the ids of the
 * organisation's repositories by lower-case name (for `selected` organisation variables).
 */
export function quotaWarnings(
  actual: ReadonlyMap<string, ActualTarget>,
  rows: readonly PlanRow[],
  sizes: ReadonlyMap<string, number>,
  repoIds: ReadonlyMap<string, number> = new Map(),
): string[] {
  const after = afterPlan(actual, rows, sizes);
  return [...countWarnings(after), ...sizeWarnings(rows, sizes), ...runSizeWarnings(after, repoIds)].sort();
}
