// One sync of one organisation: resolve the policy against its repositories, read the actual
// state of every scope involved, plan, and (unless a dry run) apply what differs. Shared by
// the handler (push, new repositories, schedule), the `steward/plan` check and `steward sync`.
import type { Store } from "../../src/index.js";
import { describeError, type Requester } from "./api.js";
import { readInstallationRepositories, readScope, readSelectedRepositories } from "./facts.js";
import { fingerprint, fingerprintKey } from "./fingerprint.js";
import { FanOut, RateLimitPause, type FanOutOptions } from "./limits.js";
import { computePlan, judgeExisting, scopeReadKey, type Action, type PlanRow } from "./plan.js";
import { quotaWarnings } from "./quotas.js";
import { adoptedKeys } from "./adopt.js";
import type { SecretsPolicy } from "./policy.js";
import { forgetRecord, loadListFirst, loadRecords, markListFirst, saveRecord } from "./records.js";
import { resolveDesired } from "./resolve.js";
import type { PublicKeyCache } from "./seal.js";
import { parseExposures, SOURCES_VARIABLE } from "./exposure.js";
import { readSources } from "./sources.js";
import {
  scopeLabel,
  type ActualTarget,
  type DesiredTarget,
  type Kind,
  type Scope,
  type TargetRecord,
} from "./targets.js";
import { deleteRow, ExistsAlready, readUpdatedAt, writeRow, type WriteContext } from "./write.js";
import { isStopped, reportReason } from "../../src/index.js";
import { ProgressTracker, type SyncProgress } from "./progress.js";

export interface SyncRequest {
  api: Requester;
  store: Store;
  org: string;
  policy: SecretsPolicy;
  /** Where the fingerprint key lives (STEWARD_DATA_DIR). */
  dataDir: string;
  keys: PublicKeyCache;
  dryRun?: boolean;
  /**
   * Why the whole sync only reports (the operator's STEWARD_MODE / STEWARD_REPORT_ONLY), if it
   * does; the document's `mode: report` and an entry's are read from the policy.
   */
  report?: string;
  /** Limit repository and environment scopes to these repositories (new repositories). */
  onlyRepos?: readonly string[];
  fanOut?: FanOutOptions;
  env?: NodeJS.ProcessEnv;
  /**
   * Stop (shutdown, lease lost, Ctrl-C): no request starts after it fired; what was written is
   * recorded, so the next run resumes from there and writes nothing twice.
   */
  signal?: AbortSignal;
  /** Called as the sync moves on: repositories and writes done, errors, time left. */
  onProgress?(progress: SyncProgress): void;
}

export interface Failure {
  scope: Scope;
  kind?: Kind;
  name?: string;
  action: Action | "read" | "resolve";
  error: string;
}

/** A target that exists but Steward did not create, left as it is on purpose (no `adopt: true`). */
export interface LeftAlone {
  scope: Scope;
  kind: Kind;
  name: string;
  /** Why, and the key that would adopt it. */
  reason: string;
}

export interface SyncResult {
  org: string;
  dryRun: boolean;
  repositories: number;
  rows: PlanRow[];
  /** Rows carried out (create, update, delete). */
  applied: PlanRow[];
  failures: Failure[];
  /**
   * Targets left alone on purpose (someone else's, no `adopt: true`): the documented behaviour,
   * reported apart from failures and never failing a run.
   */
  leftAlone: LeftAlone[];
  /** Set when a rate limit ended the run early: sync again at this time to finish. */
  pausedUntil?: Date;
  /** GitHub's limits the plan goes past or near (quotas.ts), with the counts. */
  warnings?: string[];
  /** Set when the signal stopped the run: what was written is recorded; run again to finish. */
  stopped?: boolean;
  /**
   * Report-only mode: the writes planned and not made, each with the setting that held it back
   * (`by`). Recorded in the audit trail as `secret_report` / `variable_report`.
   */
  reported?: { row: PlanRow; by: string }[];
}

interface ScopeToRead {
  kind: Kind;
  scope: Scope;
}

export async function runSync(req: SyncRequest): Promise<SyncResult> {
  const { store, org, signal } = req;
  // Every request of the run carries its stop signal: the API client refuses it once fired.
  const api: Requester = signal
    ? {
        request: (route, params = {}) =>
          req.api.request(route, { ...params, request: { ...(params.request as object | undefined), signal } }),
      }
    : req.api;
  const fan = new FanOut({ ...req.fanOut, ...(signal ? { signal } : {}) });
  const progress = new ProgressTracker(org, req.onProgress);
  const stopped = (rest: Partial<SyncResult>): SyncResult => {
    progress.finish("stopped");
    return result({ ...rest, stopped: true });
  };
  const failures: Failure[] = [];
  const leftAlone: LeftAlone[] = [];
  const result = (rest: Partial<SyncResult>): SyncResult => ({
    org,
    dryRun: req.dryRun === true,
    repositories: 0,
    rows: [],
    applied: [],
    failures,
    leftAlone,
    ...rest,
  });

  let repos;
  try {
    repos = await fan.run(() => readInstallationRepositories(api, org));
  } catch (e) {
    if (e instanceof RateLimitPause) return result({ pausedUntil: e.resumeAt });
    if (isStopped(e)) return stopped({});
    throw e;
  }
  const only = req.onlyRepos ? new Set(req.onlyRepos.map((r) => r.toLowerCase())) : undefined;
  const inReach = (scope: Scope) => scope.level === "org" || !only || only.has(scope.repo.toLowerCase());

  const desired = resolveDesired(req.policy, repos).filter((d) => inReach(d.scope));
  const sources = await readSources(
    desired.flatMap((d) => (d.from ? [d.from] : [])),
    { org, dataDir: req.dataDir, ...(req.env ? { env: req.env } : {}) },
  );
  const exposures = parseExposures((req.env ?? process.env)[SOURCES_VARIABLE]);
  // The operator's mistake, said once; the sources themselves read "not available".
  if (!exposures.ok) failures.push({ scope: { level: "org" }, action: "resolve", error: exposures.error });
  const key = await fingerprintKey(req.dataDir);
  const values = new Map<string, string>();
  const fingerprints = new Map<string, string>();
  const unresolved = new Map<string, string>();
  for (const d of desired) {
    const source = d.kind === "secret" ? sources.get(d.from ?? "") : { ok: true as const, value: d.value ?? "" };
    if (!source || !source.ok) {
      unresolved.set(d.key, source?.ok === false ? source.error : "no source");
      continue;
    }
    values.set(d.key, source.value);
    fingerprints.set(d.key, fingerprint(key, d.key, source.value));
  }

  const records = await loadRecords(store, org);
  const unlistedScopes = createFirstScopes(req, desired, records.values(), await loadListFirst(store, org));
  const toRead = new Map<string, ScopeToRead>();
  for (const t of [...desired, ...records.values()]) {
    const id = scopeReadKey(t.kind, t.scope);
    if (inReach(t.scope) && !unlistedScopes.has(id)) toRead.set(id, { kind: t.kind, scope: t.scope });
  }

  const actual = new Map<string, ActualTarget>();
  const readScopes = new Set<string>();
  const reads = [...toRead.entries()].map(async ([id, { kind, scope }]) => {
    try {
      for (const t of await fan.run(() => readScope(api, org, kind, scope))) actual.set(t.key, t);
      readScopes.add(id);
    } catch (e) {
      if (!(e instanceof RateLimitPause) && !isStopped(e))
        failures.push({ scope, kind, action: "read", error: describeError(e) });
    }
  });
  await Promise.all(reads);

  // Org targets shared with selected repositories: their lists matter only for targets we manage.
  const managed = new Set([...desired.map((d) => d.key), ...records.keys()]);
  const selected = [...actual.values()].filter(
    (a) => a.scope.level === "org" && a.visibility === "selected" && managed.has(a.key),
  );
  await Promise.all(
    selected.map(async (a) => {
      try {
        a.selectedRepositoryIds = await fan.run(() => readSelectedRepositories(api, org, a.kind, a.name));
      } catch (e) {
        readScopes.delete(scopeReadKey(a.kind, a.scope));
        if (!(e instanceof RateLimitPause) && !isStopped(e))
          failures.push({ scope: a.scope, kind: a.kind, name: a.name, action: "read", error: describeError(e) });
      }
    }),
  );
  if (signal?.aborted) return stopped({ repositories: repos.length });
  const pausedEarly = fan.pausedUntil();
  if (pausedEarly) return result({ repositories: repos.length, pausedUntil: pausedEarly });

  const plan = computePlan({
    desired,
    fingerprints,
    actual,
    records,
    readScopes,
    unlistedScopes,
    prune: req.policy.prune === true,
    adopt: adoptedKeys(req.policy, desired),
  });
  let rows: PlanRow[] = [];
  for (const row of plan.rows) {
    if (row.conflict) leftAlone.push({ scope: row.scope, kind: row.kind, name: row.name, reason: row.reason });
    const why = unresolved.get(row.key);
    if (why && row.action !== "unchanged" && row.action !== "delete") {
      failures.push({ scope: row.scope, kind: row.kind, name: row.name, action: "resolve", error: why });
    } else rows.push(row);
  }
  const warnings = quotaWarnings(
    actual,
    rows,
    new Map([...values].map(([k, v]) => [k, Buffer.byteLength(v)])),
    new Map(repos.map((r) => [r.name.toLowerCase(), r.id])),
  );
  if (req.dryRun) return result({ repositories: repos.length, rows, warnings });

  const ctx: WriteContext = { api, org, keys: req.keys };
  const applied: PlanRow[] = [];
  /** Create-first rows that found a variable there, as judged after reading it. */
  const judged = new Map<string, PlanRow>();
  const reported: { row: PlanRow; by: string }[] = [];
  const writes: PlanRow[] = [];
  for (const row of rows) {
    if (row.action === "unchanged") continue;
    const by = reportedBy(req, row);
    if (by) reported.push({ row, by });
    else writes.push(row);
  }
  for (const r of reported) await auditReport(req, r.row, r.by);
  progress.planned(
    repos.map((r) => r.name),
    writes,
  );
  await Promise.all(
    writes.map(async (row) => {
      try {
        const done = await applyRow(
          fan,
          ctx,
          { ...req, api },
          row,
          values.get(row.key) ?? "",
          fingerprints.get(row.key) ?? "",
        );
        if (done !== row) judged.set(row.key, done);
        if (done.conflict) leftAlone.push({ scope: row.scope, kind: row.kind, name: row.name, reason: done.reason });
        if (done.action !== "unchanged") applied.push(done);
        progress.rowFinished(row, true);
      } catch (e) {
        if (isStopped(e)) return;
        if (!(e instanceof RateLimitPause))
          failures.push({
            scope: row.scope,
            kind: row.kind,
            name: row.name,
            action: row.action,
            error: describeError(e),
          });
        progress.rowFinished(row, false);
      }
    }),
  );
  applied.sort((a, b) => (a.key < b.key ? -1 : 1));
  if (judged.size) rows = rows.map((r) => judged.get(r.key) ?? r);
  // Stopped: every write made is recorded; forgetting and baselines wait for the run that finishes.
  if (signal?.aborted) return stopped({ repositories: repos.length, rows, applied });
  for (const k of plan.forget) await forgetRecord(store, org, k);
  for (const b of plan.baselines) {
    const record = records.get(b.key);
    if (record) await saveRecord(store, org, b.key, { ...record, remoteUpdatedAt: b.updatedAt });
  }
  applied.sort((a, b) => (a.key < b.key ? -1 : 1));
  progress.finish("done");
  return result({
    repositories: repos.length,
    rows,
    applied,
    warnings,
    ...(reported.length ? { reported } : {}),
    ...(fan.pausedUntil() ? { pausedUntil: fan.pausedUntil() } : {}),
  });
}

/**
 * Why a planned write is only reported, if it is: the operator's setting, the document's `mode:
 * report`, then the entry's own (a deletion by prune of a name no entry lists follows the document).
 */
function reportedBy(req: SyncRequest, row: Pick<PlanRow, "kind" | "name">): string | undefined {
  const entries: Record<string, { mode?: string } | undefined> =
    row.kind === "secret" ? (req.policy.secrets ?? {}) : (req.policy.variables ?? {});
  return reportReason(
    req.report,
    req.policy.mode === "report" && "secrets.yml mode: report",
    entries[row.name]?.mode === "report" &&
      `secrets.yml ${row.kind === "secret" ? "secrets" : "variables"}.${row.name}.mode: report`,
  );
}

/** "would have created", "would have deleted", ...: what report-only mode says of a row. */
export function wouldText(row: Pick<PlanRow, "action">): string {
  return `would have ${row.action === "create" ? "created" : row.action === "update" ? "updated" : "deleted"}`;
}

/** A write held back by report-only mode is recorded as the write would be, with what it would have done. */
async function auditReport(req: SyncRequest, row: PlanRow, by: string): Promise<void> {
  await req.store.audit({
    kind: `${row.kind}_report`,
    source: "secrets",
    details: { ...rowDetails(req, row), would: wouldText(row), reportOnly: by },
  });
}

function rowDetails(req: SyncRequest, row: PlanRow): Record<string, unknown> {
  return {
    org: req.org,
    scope: scopeLabel(row.scope),
    kind: row.kind,
    name: row.name,
    action: row.action,
    changes: row.changes,
    reason: row.reason,
  };
}

/**
 * Variable scopes (of a repository or environment) to plan without listing them: Steward has no
 * record there and no create there found one it did not write, so what it wants there is most
 * likely missing and a create tells (plan.ts). Not for
 * a dry run or a write held back by report mode, whose plans must say what is there, nor for
 * organisation variables, whose sharing is judged from the list.
 */
function createFirstScopes(
  req: SyncRequest,
  desired: readonly DesiredTarget[],
  records: Iterable<TargetRecord>,
  listFirst: ReadonlySet<string>,
): Set<string> {
  const out = new Set<string>();
  if (req.dryRun) return out;
  const recorded = new Set([...listFirst, ...[...records].map((r) => scopeReadKey(r.kind, r.scope))]);
  // A scope where any entry is only reported is listed, so its report says what is there.
  const reported = new Set<string>();
  for (const d of desired) {
    const id = scopeReadKey(d.kind, d.scope);
    if (d.kind !== "variable" || d.scope.level === "org" || recorded.has(id)) continue;
    if (reportedBy(req, d)) reported.add(id);
    else out.add(id);
  }
  for (const id of reported) out.delete(id);
  return out;
}

/**
 * Each request in its own fan-out job: a rate-limit retry never repeats a write that succeeded.
 * Returns the row as carried out: for a create-first variable that exists, the row judged after
 * reading it (left alone, unchanged, or adopted and written).
 */
async function applyRow(
  fan: FanOut,
  ctx: WriteContext,
  req: SyncRequest,
  row: PlanRow,
  value: string,
  fp: string,
): Promise<PlanRow> {
  if (row.action === "delete") {
    const details = rowDetails(req, row);
    await fan.run(() => deleteRow(ctx, row));
    await forgetRecord(req.store, req.org, row.key);
    await req.store.audit({ kind: `${row.kind}_delete`, source: "secrets", details });
    return row;
  }
  let serverWrittenAt: string | undefined;
  try {
    serverWrittenAt = await fan.run(() => writeRow(ctx, row, value));
  } catch (e) {
    if (!(e instanceof ExistsAlready)) throw e;
    const d = row.desired!;
    await markListFirst(req.store, req.org, scopeReadKey(d.kind, d.scope));
    const judged = judgeExisting(d, e.actual, adoptedKeys(req.policy, [d]).get(d.key));
    return judged.action === "unchanged" ? judged : applyRow(fan, ctx, req, judged, value, fp);
  }
  // The create went through: it was missing, as a list would have said.
  const done: PlanRow = row.createFirst ? { ...row, reason: "missing" } : row;
  const record: TargetRecord = {
    kind: row.kind,
    scope: row.scope,
    name: row.name,
    fingerprint: fp,
    remoteUpdatedAt: "",
    created: row.created,
    writtenAt: new Date().toISOString(),
  };
  if (serverWrittenAt) record.serverWrittenAt = serverWrittenAt;
  // Recorded at once, so a run stopped after the write does not write it again.
  await saveRecord(req.store, req.org, row.key, record);
  await req.store.audit({ kind: `${row.kind}_write`, source: "secrets", details: rowDetails(req, done) });
  // Secrets cannot be read back. Their drift baseline is the updated_at the next list shows (no extra
  // request); without the server's time of the write to bound it, read it back now instead.
  if (row.kind === "secret" && !serverWrittenAt)
    await saveRecord(req.store, req.org, row.key, {
      ...record,
      remoteUpdatedAt: await fan.run(() => readUpdatedAt(ctx, row)),
    });
  return done;
}
