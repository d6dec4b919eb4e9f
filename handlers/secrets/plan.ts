// The plan: desired x actual x Steward's records -> create / update / delete / unchanged, each
// with its reason. Pure; never sees a secret value (only fingerprints of values).
import type { ActualTarget, DesiredTarget, Kind, Scope, TargetRecord } from "./targets.js";
import { scopeKey } from "./targets.js";

export type Action = "create" | "update" | "delete" | "unchanged";
/** What a write changes: an org target's visibility and repository list are their own changes. */
export type Change = "value" | "visibility" | "repositories";

export interface PlanRow {
  key: string;
  kind: Kind;
  scope: Scope;
  name: string;
  action: Action;
  changes: Change[];
  reason: string;
  /** For create/update: the target to write. */
  desired?: DesiredTarget;
  /** Whether the target counts as created by Steward after this row is applied. */
  created: boolean;
  /** It exists, Steward never wrote it, and the policy does not say `adopt: true`: left alone, reported as such (never a failure). */
  conflict?: boolean;
  /** Org targets shared with selected repositories: the repository ids to add and to remove, one at a time. */
  repositoryChanges?: { add: number[]; remove: number[] };
  /**
   * Planned without listing its scope (see PlanInput.unlistedScopes): created, and only if it turns
   * out to exist read and judged like a listed one (someone else's is left alone unless adopted).
   */
  createFirst?: boolean;
}

export interface PlanInput {
  desired: readonly DesiredTarget[];
  /** Desired key -> keyed fingerprint of the value the policy wants there. */
  fingerprints: ReadonlyMap<string, string>;
  actual: ReadonlyMap<string, ActualTarget>;
  records: ReadonlyMap<string, TargetRecord>;
  /** `${kind}/${scopeKey}` of every scope whose list was read; other scopes are not judged. */
  readScopes: ReadonlySet<string>;
  /**
   * Scopes judged without a read: variable scopes where Steward has no record, so every desired
   * variable there is most likely missing. Creating it answers the question the list would (a
   * variable that exists refuses the create), for one request instead of two.
   */
  unlistedScopes?: ReadonlySet<string>;
  prune: boolean;
  /**
   * Desired key -> the policy's `adopt` for it: true adopts an existing target Steward did not create
   * (overwritten, recorded as Steward's); false or absent leaves it alone and reports a conflict:
   * someone else's secret is never overwritten unless the operator says so.
   */
  adopt?: ReadonlyMap<string, boolean>;
}

export interface Plan {
  rows: PlanRow[];
  /** Records of targets that no longer exist anywhere: drop them (no API call). */
  forget: string[];
  /** Records written without a read-back of `updated_at` (the run stopped): record it now. */
  baselines: { key: string; updatedAt: string }[];
}

export function scopeReadKey(kind: Kind, scope: Scope): string {
  return `${kind}/${scopeKey(scope)}`;
}

const sameIds = (a: readonly number[] | undefined, b: readonly number[] | undefined) =>
  (a ?? []).length === (b ?? []).length &&
  [...(a ?? [])].sort((x, y) => x - y).every((v, i) => v === [...(b ?? [])].sort((x, y) => x - y)[i]);

const WRITE_CLOCK_SLACK_MS = 1000;

function valueReason(d: DesiredTarget, a: ActualTarget, r: TargetRecord | undefined, fp: string): string | undefined {
  if (d.kind === "variable") {
    // Variables are readable, so the remote value itself tells whether it drifted.
    if (a.value === d.value) return undefined;
    if (r && r.fingerprint !== fp) return "value changed in policy";
    return r ? "value changed out of band" : "value differs from policy";
  }
  if (!r) return "exists but Steward never wrote it (value unknown)";
  if (r.fingerprint !== fp) return "value changed in policy";
  if (r.remoteUpdatedAt === "") {
    // Baseline not known yet: anything stamped after the API answered Steward's write is someone else's.
    // One second of slack: both are whole seconds, and the API may stamp Date before it finishes the write.
    const wrote = r.serverWrittenAt ? Date.parse(r.serverWrittenAt) : NaN;
    if (Number.isFinite(wrote) && Date.parse(a.updatedAt) > wrote + WRITE_CLOCK_SLACK_MS)
      return `changed out of band after Steward's write (updated_at ${a.updatedAt})`;
    return undefined;
  }
  if (r.remoteUpdatedAt !== a.updatedAt)
    return `changed out of band (updated_at ${r.remoteUpdatedAt} -> ${a.updatedAt})`;
  return undefined;
}

/** Why a foreign target is left alone, and the exact key that would adopt it. */
function conflictReason(d: DesiredTarget, reasons: readonly string[]): string {
  const section = d.kind === "secret" ? "secrets" : "variables";
  return (
    `exists and Steward did not create it, so it is left as it is (${reasons.join("; ")}); ` +
    `to let Steward overwrite it and manage it from now on, set \`adopt: true\` on ${section}.${d.name} (or on the whole document)`
  );
}

function compare(
  d: DesiredTarget,
  a: ActualTarget,
  r: TargetRecord | undefined,
  fp: string,
  adopt: boolean | undefined,
): PlanRow {
  let repositoryChanges: PlanRow["repositoryChanges"];
  const changes: Change[] = [];
  const reasons: string[] = [];
  const why = valueReason(d, a, r, fp);
  if (why) {
    changes.push("value");
    reasons.push(why);
  }
  if (d.scope.level === "org") {
    if (d.visibility !== a.visibility) {
      changes.push("visibility");
      reasons.push(`visibility ${a.visibility ?? "unknown"} -> ${d.visibility}`);
    }
    if (d.visibility === "selected" && !sameIds(d.selectedRepositoryIds, a.selectedRepositoryIds)) {
      const want = new Set(d.selectedRepositoryIds ?? []);
      const have = new Set(a.selectedRepositoryIds ?? []);
      const add = [...want].filter((id) => !have.has(id));
      const remove = [...have].filter((id) => !want.has(id));
      changes.push("repositories");
      reasons.push(`selected repositories +${add.length} -${remove.length}`);
      repositoryChanges = { add, remove };
    }
  }
  const base = { key: d.key, kind: d.kind, scope: d.scope, name: d.name, created: r?.created ?? false };
  if (!r && adopt === true) {
    // Adopted: written once so Steward knows its value, and Steward's from now on (prune may delete it).
    const why = [
      "adopted (adopt: true): it exists and Steward did not create it",
      ...reasons.filter((x) => x !== "exists but Steward never wrote it (value unknown)"),
    ];
    return {
      ...base,
      created: true,
      action: "update",
      changes: changes.includes("value") ? changes : ["value", ...changes],
      reason: why.join("; "),
      desired: d,
      ...(repositoryChanges ? { repositoryChanges } : {}),
    };
  }
  if (changes.length === 0) return { ...base, action: "unchanged", changes, reason: r ? "in sync" : "matches policy" };
  if (!r && adopt !== true) {
    // Someone else's, and the operator did not say to take it over: reported, never overwritten.
    return { ...base, action: "unchanged", changes: [], conflict: true, reason: conflictReason(d, reasons) };
  }
  return {
    ...base,
    action: "update",
    changes,
    reason: reasons.join("; "),
    desired: d,
    ...(repositoryChanges ? { repositoryChanges } : {}),
  };
}

/**
 * The row for a target that a create found already there (a `createFirst` row): judged as a listed
 * target Steward has no record of would be, so someone else's variable is left alone unless adopted.
 */
export function judgeExisting(d: DesiredTarget, a: ActualTarget, adopt: boolean | undefined): PlanRow {
  return compare(d, a, undefined, "", adopt);
}

/** The row that creates `d` where it is not. */
function createRow(d: DesiredTarget, reason: string): PlanRow {
  return {
    key: d.key,
    kind: d.kind,
    scope: d.scope,
    name: d.name,
    action: "create",
    changes:
      d.scope.level === "org" && d.visibility === "selected" ? ["value", "visibility", "repositories"] : ["value"],
    reason,
    desired: d,
    created: true,
  };
}

export function computePlan(input: PlanInput): Plan {
  const rows: PlanRow[] = [];
  const forget: string[] = [];
  const baselines: Plan["baselines"] = [];
  const wanted = new Set<string>();
  for (const d of input.desired) {
    const scope = scopeReadKey(d.kind, d.scope);
    if (input.unlistedScopes?.has(scope) && d.kind === "variable") {
      wanted.add(d.key);
      rows.push({
        ...createRow(d, "not written by Steward here before: created, or judged if it exists"),
        createFirst: true,
      });
      continue;
    }
    if (!input.readScopes.has(scope)) continue;
    wanted.add(d.key);
    const a = input.actual.get(d.key);
    const r = input.records.get(d.key);
    const fp = input.fingerprints.get(d.key) ?? "";
    if (!a) {
      rows.push(createRow(d, r ? "deleted out of band" : "missing"));
      continue;
    }
    const row = compare(d, a, r, fp, input.adopt?.get(d.key));
    if (row.action === "unchanged" && d.kind === "secret" && r?.remoteUpdatedAt === "")
      baselines.push({ key: d.key, updatedAt: a.updatedAt });
    rows.push(row);
  }
  for (const [key, r] of input.records) {
    if (wanted.has(key) || !input.readScopes.has(scopeReadKey(r.kind, r.scope))) continue;
    const base = { key, kind: r.kind, scope: r.scope, name: r.name, changes: [] as Change[], created: r.created };
    if (!input.actual.has(key)) {
      forget.push(key);
    } else if (!input.prune) {
      rows.push({ ...base, action: "unchanged", reason: "no longer in policy; prune is off" });
    } else if (r.created) {
      rows.push({ ...base, action: "delete", reason: "no longer in policy; created by Steward" });
    } else {
      // Steward took it over but a person created it: people's secrets are never deleted.
      rows.push({ ...base, action: "unchanged", reason: "no longer in policy; not created by Steward, kept" });
      forget.push(key);
    }
  }
  rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { rows, forget, baselines };
}

export interface PlanCounts {
  create: number;
  update: number;
  delete: number;
  unchanged: number;
}

export function countPlan(rows: readonly PlanRow[]): PlanCounts {
  const counts: PlanCounts = { create: 0, update: 0, delete: 0, unchanged: 0 };
  for (const row of rows) counts[row.action]++;
  return counts;
}
