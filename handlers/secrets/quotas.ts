// GitHub's limits on Actions secrets and variables, checked against a plan before it is applied, so
// a plan warns with the counts instead of a write failing half-way. Figures from GitHub's docs
// (secrets reference: 1,000 organisation secrets, 100 per repository, 100 per environment, 48 KB per
// value; variables reference: 1,000 organisation variables, 500 per repository, 100 per environment,
// 48 KB per value). Pure.
import type { PlanRow } from "./plan.js";
import { scopeKey, scopeLabel, type ActualTarget, type Kind, type Scope } from "./targets.js";

export const LIMITS: Record<Kind, Record<Scope["level"], number>> = {
  secret: { org: 1000, repo: 100, env: 100 },
  variable: { org: 1000, repo: 500, env: 100 },
};
export const MAX_VALUE_BYTES = 48 * 1024;
/** Warn once a scope would be this full. */
export const NEAR_FRACTION = 0.9;

const plural = (kind: Kind, n: number) => `${n} ${kind}${n === 1 ? "" : "s"}`;

/**
 * Warnings for scopes a plan would take past or near GitHub's count limits, and for values over the
 * size limit. `actual` holds every target of each scope read; `sizes` the byte length of each value
 * to be written, by target key (values themselves never reach this module).
 */
export function quotaWarnings(actual: ReadonlyMap<string, ActualTarget>, rows: readonly PlanRow[], sizes: ReadonlyMap<string, number>): string[] {
  const counts = new Map<string, { kind: Kind; scope: Scope; n: number }>();
  const at = (kind: Kind, scope: Scope) => {
    const id = `${kind}/${scopeKey(scope)}`;
    let c = counts.get(id);
    if (!c) counts.set(id, (c = { kind, scope, n: 0 }));
    return c;
  };
  for (const a of actual.values()) at(a.kind, a.scope).n++;
  for (const r of rows) {
    if (r.action === "create") at(r.kind, r.scope).n++;
    if (r.action === "delete") at(r.kind, r.scope).n--;
  }
  const warnings: string[] = [];
  for (const { kind, scope, n } of counts.values()) {
    const limit = LIMITS[kind][scope.level];
    if (n > limit) warnings.push(`${scopeLabel(scope)} would have ${plural(kind, n)}, over GitHub's limit of ${limit}: the writes past it will fail`);
    else if (n >= Math.ceil(limit * NEAR_FRACTION)) warnings.push(`${scopeLabel(scope)} would have ${plural(kind, n)}, near GitHub's limit of ${limit}`);
  }
  for (const r of rows) {
    if ((r.action !== "create" && r.action !== "update") || !r.changes.includes("value")) continue;
    const size = sizes.get(r.key) ?? 0;
    if (size > MAX_VALUE_BYTES) warnings.push(`${r.kind} ${r.name} in ${scopeLabel(r.scope)} is ${(size / 1024).toFixed(1)} KB, over GitHub's limit of 48 KB per value: its write will fail`);
  }
  return warnings.sort();
}
