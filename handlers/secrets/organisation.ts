// Sync (or plan) one organisation from its admin repository's policy: what the handler, the
// scheduled task and `steward sync` all call.
import type { Store, Problem, ResponseCache } from "../../src/index.js";
import { withConditionalReads, type Requester } from "./api.js";
import { adminRepoFor } from "./decide.js";
import { loadSecretsDocument } from "./document.js";
import type { FanOutOptions } from "./limits.js";
import { PublicKeyCache } from "./seal.js";
import { runSync, type SyncResult } from "./sync.js";
import type { SyncProgress } from "./progress.js";
import { withJobLease, type JobLeaseOptions } from "../../src/index.js";

/** What the console shows of an organisation's last finished sync (not a plan). */
export interface LastSync {
  at: string;
  /** Who ran it: `steward` (the service) or the CLI's name for itself. */
  who: string;
  repositories: number;
  applied: number;
  failures: number;
  leftAlone: number;
  /** Set when a rate limit ended it early: the rest waits until then. */
  pausedUntil?: string;
  /** Why it wrote nothing (report only), if so. */
  report?: string;
}

export const lastSyncKey = (org: string) => `sync:last:${org.toLowerCase()}`;

export type OrganisationOutcome =
  | { status: "no_admin_repo"; reason: string }
  | { status: "no_policy"; reason: string }
  | { status: "invalid"; file: string; problems: Problem[] }
  | { status: "synced"; result: SyncResult };

export interface OrganisationSync {
  api: Requester;
  store: Store;
  org: string;
  /** STEWARD_ADMIN_REPO. */
  adminRepo: string;
  dataDir: string;
  /** API base URL plus installation: names the fan-out lane and the public-key cache. */
  laneId: string;
  /** Policy at this ref of the admin repository (default branch when absent). */
  ref?: string;
  dryRun?: boolean;
  /** Why every write only reports (the operator's setting), if it does: see SyncRequest.report. */
  report?: string;
  onlyRepos?: readonly string[];
  fanOut?: FanOutOptions;
  env?: NodeJS.ProcessEnv;
  /**
   * Where the ETags and bodies of the sync's reads are kept (default: the process-wide
   * `syncReads`, keyed by `laneId`); `false` sends every read unconditionally.
   */
  reads?: ResponseCache | false;
  /** Stops the sync between steps (see SyncRequest.signal). */
  signal?: AbortSignal;
  onProgress?(progress: SyncProgress): void;
  /**
   * Who runs this sync, for the single-flight lease (a sync that writes holds it; a dry run
   * does not): a second one throws LeaseHeld naming the holder, waits, or forces.
   */
  lease?: Omit<JobLeaseOptions, "signal"> & { who: string };
}

/** The store key of an organisation's sync lease. */
export function syncLeaseKey(org: string): string {
  return `secrets/sync-lease/${org.toLowerCase()}`;
}

const keyCaches = new Map<string, PublicKeyCache>();

/** Public keys are cached per API base and installation, for the life of the process. */
export function publicKeysFor(laneId: string): PublicKeyCache {
  let cache = keyCaches.get(laneId);
  if (!cache) {
    cache = new PublicKeyCache(laneId);
    keyCaches.set(laneId, cache);
  }
  return cache;
}

const running = new Map<string, Promise<unknown>>();

/** Two syncs of one organisation in this process run one after the other, never interleaved. */
function serialised<T>(id: string, job: () => Promise<T>): Promise<T> {
  const previous = running.get(id) ?? Promise.resolve();
  const next = previous.catch(() => undefined).then(job);
  running.set(id, next);
  void next
    .finally(() => {
      if (running.get(id) === next) running.delete(id);
    })
    .catch(() => undefined);
  return next;
}

export function syncOrganisation(req: OrganisationSync): Promise<OrganisationOutcome> {
  return serialised(`${req.laneId}|${req.org.toLowerCase()}|${req.dryRun ? "plan" : "sync"}`, async () => {
    const admin = adminRepoFor(req.adminRepo, req.org);
    if (!admin) return { status: "no_admin_repo", reason: `STEWARD_ADMIN_REPO ${req.adminRepo} is not in ${req.org}` };
    // Every read conditional: an unchanged list answers 304, which costs no rate limit.
    const api = req.reads === false ? req.api : withConditionalReads(req.api, req.laneId, req.reads);
    const doc = await loadSecretsDocument(api, req.org, admin, req.ref);
    if (!doc.found) return { status: "no_policy", reason: `${req.org}/${admin} has no .github/steward/secrets.yml` };
    if (!doc.policy) return { status: "invalid", file: doc.file, problems: doc.problems };
    const policy = doc.policy;
    const run = (signal: AbortSignal | undefined) =>
      runSync({
        api,
        store: req.store,
        org: req.org,
        policy,
        dataDir: req.dataDir,
        keys: publicKeysFor(req.laneId),
        dryRun: req.dryRun,
        ...(req.report ? { report: req.report } : {}),
        onlyRepos: req.onlyRepos,
        fanOut: req.fanOut,
        env: req.env,
        ...(signal ? { signal } : {}),
        ...(req.onProgress ? { onProgress: req.onProgress } : {}),
      });
    if (req.dryRun) return { status: "synced", result: await run(req.signal) };
    const { who, ...lease } = req.lease ?? { who: "steward" };
    const result = await withJobLease(
      req.store,
      syncLeaseKey(req.org),
      `the sync of ${req.org}`,
      who,
      (signal) => run(signal),
      {
        ...lease,
        ...(req.signal ? { signal: req.signal } : {}),
      },
    );
    const last: LastSync = {
      at: new Date().toISOString(),
      who,
      repositories: result.repositories,
      applied: result.applied.length,
      failures: result.failures.length,
      leftAlone: result.leftAlone.length,
      ...(result.pausedUntil ? { pausedUntil: result.pausedUntil.toISOString() } : {}),
      ...(req.report ? { report: req.report } : {}),
    };
    await req.store.set(lastSyncKey(req.org), last);
    return { status: "synced", result };
  });
}
