// One sync of one organisation: resolve the policy against its repositories, read the actual
// state of every scope involved, plan, and (unless a dry run) apply what differs. Shared by
// the handler (push, new repositories, schedule), the `steward/plan` check and `steward sync`.
import type { Store } from "../../src/index.js";
import { describeError, type Requester } from "./api.js";
import { readInstallationRepositories, readScope, readSelectedRepositories } from "./facts.js";
import { fingerprint, fingerprintKey } from "./fingerprint.js";
import { FanOut, RateLimitPause, type FanOutOptions } from "./limits.js";
import { computePlan, scopeReadKey, type Action, type PlanRow } from "./plan.js";
import type { SecretsPolicy } from "./policy.js";
import { forgetRecord, loadRecords, saveRecord } from "./records.js";
import { resolveDesired } from "./resolve.js";
import type { PublicKeyCache } from "./seal.js";
import { readSources } from "./sources.js";
import { scopeLabel, type ActualTarget, type Kind, type Scope, type TargetRecord } from "./targets.js";
import { deleteRow, readUpdatedAt, writeRow, type WriteContext } from "./write.js";

export interface SyncRequest {
  api: Requester;
  store: Store;
  org: string;
  policy: SecretsPolicy;
  /** Where the fingerprint key lives (STEWARD_DATA_DIR). */
  dataDir: string;
  keys: PublicKeyCache;
  /** Identifies the installation's lane (concurrency and rate-limit pauses are shared in it). */
  laneId: string;
  dryRun?: boolean;
  /** Limit repository and environment scopes to these repositories (new repositories). */
  onlyRepos?: readonly string[];
  fanOut?: FanOutOptions;
  env?: NodeJS.ProcessEnv;
}

export interface Failure {
  scope: Scope;
  kind?: Kind;
  name?: string;
  action: Action | "read" | "resolve";
  error: string;
}

export interface SyncResult {
  org: string;
  dryRun: boolean;
  repositories: number;
  rows: PlanRow[];
  /** Rows carried out (create, update, delete). */
  applied: PlanRow[];
  failures: Failure[];
  /** Set when a rate limit ended the run early: sync again at this time to finish. */
  pausedUntil?: Date;
}

interface ScopeToRead {
  kind: Kind;
  scope: Scope;
}

export async function runSync(req: SyncRequest): Promise<SyncResult> {
  const { api, store, org } = req;
  const fan = new FanOut(req.laneId, req.fanOut);
  const failures: Failure[] = [];
  const result = (rest: Partial<SyncResult>): SyncResult => ({ org, dryRun: req.dryRun === true, repositories: 0, rows: [], applied: [], failures, ...rest });

  let repos;
  try {
    repos = await fan.run(() => readInstallationRepositories(api, org));
  } catch (e) {
    if (e instanceof RateLimitPause) return result({ pausedUntil: e.resumeAt });
    throw e;
  }
  const only = req.onlyRepos ? new Set(req.onlyRepos.map((r) => r.toLowerCase())) : undefined;
  const inReach = (scope: Scope) => scope.level === "org" || !only || only.has(scope.repo.toLowerCase());

  const desired = resolveDesired(req.policy, repos).filter((d) => inReach(d.scope));
  const sources = await readSources(desired.flatMap((d) => (d.from ? [d.from] : [])), req.env);
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
  const toRead = new Map<string, ScopeToRead>();
  for (const t of [...desired, ...records.values()]) {
    if (inReach(t.scope)) toRead.set(scopeReadKey(t.kind, t.scope), { kind: t.kind, scope: t.scope });
  }

  const actual = new Map<string, ActualTarget>();
  const readScopes = new Set<string>();
  const reads = [...toRead.entries()].map(async ([id, { kind, scope }]) => {
    try {
      for (const t of await fan.run(() => readScope(api, org, kind, scope))) actual.set(t.key, t);
      readScopes.add(id);
    } catch (e) {
      if (!(e instanceof RateLimitPause)) failures.push({ scope, kind, action: "read", error: describeError(e) });
    }
  });
  await Promise.all(reads);

  // Org targets shared with selected repositories: their lists matter only for targets we manage.
  const managed = new Set([...desired.map((d) => d.key), ...records.keys()]);
  const selected = [...actual.values()].filter((a) => a.scope.level === "org" && a.visibility === "selected" && managed.has(a.key));
  await Promise.all(
    selected.map(async (a) => {
      try {
        a.selectedRepositoryIds = await fan.run(() => readSelectedRepositories(api, org, a.kind, a.name));
      } catch (e) {
        readScopes.delete(scopeReadKey(a.kind, a.scope));
        if (!(e instanceof RateLimitPause)) failures.push({ scope: a.scope, kind: a.kind, name: a.name, action: "read", error: describeError(e) });
      }
    }),
  );
  const pausedEarly = fan.pausedUntil();
  if (pausedEarly) return result({ repositories: repos.length, pausedUntil: pausedEarly });

  const plan = computePlan({ desired, fingerprints, actual, records, readScopes, prune: req.policy.prune === true });
  const rows: PlanRow[] = [];
  for (const row of plan.rows) {
    const why = unresolved.get(row.key);
    if (why && row.action !== "unchanged" && row.action !== "delete") {
      failures.push({ scope: row.scope, kind: row.kind, name: row.name, action: "resolve", error: why });
    } else rows.push(row);
  }
  if (req.dryRun) return result({ repositories: repos.length, rows });

  const ctx: WriteContext = { api, org, keys: req.keys };
  const applied: PlanRow[] = [];
  await Promise.all(
    rows
      .filter((row) => row.action !== "unchanged")
      .map(async (row) => {
        try {
          await applyRow(fan, ctx, req, row, values.get(row.key) ?? "", fingerprints.get(row.key) ?? "");
          applied.push(row);
        } catch (e) {
          if (!(e instanceof RateLimitPause)) failures.push({ scope: row.scope, kind: row.kind, name: row.name, action: row.action, error: describeError(e) });
        }
      }),
  );
  for (const k of plan.forget) await forgetRecord(store, org, k);
  for (const b of plan.baselines) {
    const record = records.get(b.key);
    if (record) await saveRecord(store, org, b.key, { ...record, remoteUpdatedAt: b.updatedAt });
  }
  applied.sort((a, b) => (a.key < b.key ? -1 : 1));
  return result({ repositories: repos.length, rows, applied, ...(fan.pausedUntil() ? { pausedUntil: fan.pausedUntil() } : {}) });
}

/** Each request in its own fan-out job: a rate-limit retry never repeats a write that succeeded. */
async function applyRow(fan: FanOut, ctx: WriteContext, req: SyncRequest, row: PlanRow, value: string, fp: string): Promise<void> {
  const details = { org: req.org, scope: scopeLabel(row.scope), kind: row.kind, name: row.name, action: row.action, changes: row.changes, reason: row.reason };
  if (row.action === "delete") {
    await fan.run(() => deleteRow(ctx, row));
    await forgetRecord(req.store, req.org, row.key);
    await req.store.audit({ kind: `${row.kind}_delete`, source: "secrets", details });
    return;
  }
  const serverWrittenAt = await fan.run(() => writeRow(ctx, row, value));
  const record: TargetRecord = { kind: row.kind, scope: row.scope, name: row.name, fingerprint: fp, remoteUpdatedAt: "", created: row.created, writtenAt: new Date().toISOString() };
  if (serverWrittenAt) record.serverWrittenAt = serverWrittenAt;
  // Recorded at once, so a run stopped after the write does not write it again.
  await saveRecord(req.store, req.org, row.key, record);
  await req.store.audit({ kind: `${row.kind}_write`, source: "secrets", details });
  // Secrets cannot be read back. Their drift baseline is the updated_at the next list shows (no extra
  // request); without the server's time of the write to bound it, read it back now instead.
  if (row.kind === "secret" && !serverWrittenAt) await saveRecord(req.store, req.org, row.key, { ...record, remoteUpdatedAt: await fan.run(() => readUpdatedAt(ctx, row)) });
}
