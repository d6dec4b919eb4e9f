// A sandbox hub with one organisation and the app installed, an installation client as the
// service builds it (its throttling waits out rate limits; retries of failed requests off, so a
// fault is what the sync sees), a SQLite store and a data dir. Shared by the secrets
// integration tests.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import type { InstallationOctokit } from "../../../src/index.js";
import { createOctokitFactory } from "../../../src/api/client.js";
import { inProcessCoordination } from "../../../src/coordination/in-process.js";
import { loadConfig } from "../../../src/config/env.js";
import { createHub, STEWARD_PERMISSIONS, type HubHandle } from "../../../src/sandbox/hub.js";
import { openSqliteStore, type SqliteStore } from "../../../src/store/sqlite/store.js";
import { asRequester, syncReads, type Requester } from "../../../handlers/secrets/api.js";
import { syncOrganisation, type OrganisationOutcome } from "../../../handlers/secrets/organisation.js";
import type { SyncResult } from "../../../handlers/secrets/sync.js";
import type { FanOutOptions } from "../../../handlers/secrets/limits.js";

export const ORG = "acme";
export const ADMIN = "admin";
export const POLICY = ".github/steward/secrets.yml";

export interface World {
  h: HubHandle;
  api: Requester;
  /** The client behind `api` (its hooks see every request the sync sends). */
  octokit: InstallationOctokit;
  /** A new client for the installation: a new installation token. */
  newClient(): Promise<InstallationOctokit>;
  /** The sync's lane: also the namespace of its cached reads. */
  laneId: string;
  installationId: number;
  store: SqliteStore;
  dataDir: string;
  /** The process environment (sources resolve from it, as in the service). */
  env: NodeJS.ProcessEnv;
  /** Push a policy to the admin repository's default branch. */
  pushPolicy(yaml: string): void;
  sync(opts?: { dryRun?: boolean; onlyRepos?: string[]; fanOut?: FanOutOptions; api?: Requester }): Promise<SyncResult>;
  /** Requests the hub's rate limit has charged the installation so far (304s are free). */
  charged(): number;
  /** Requests made by the installation since `mark()`. */
  mark(): () => { method: string; path: string; query: string; status: number }[];
  close(): Promise<void>;
}

let lane = 0;

export async function createWorld(
  opts: { repos?: string[]; environments?: Record<string, string[]>; env?: NodeJS.ProcessEnv } = {},
): Promise<World> {
  const h = await createHub({ seed: "empty" });
  h.control.createOrg(ORG, { members: ["octo-admin"] });
  h.control.createRepo({ owner: ORG, name: ADMIN, private: true });
  for (const name of opts.repos ?? []) h.control.createRepo({ owner: ORG, name, private: name.startsWith("private-") });
  for (const [repo, envs] of Object.entries(opts.environments ?? {})) {
    for (const e of envs) h.domains.deployments.putEnvironment(h.control.repo(ORG, repo)!, e);
  }
  const inst =
    h.control.installation(ORG) ?? h.control.install(ORG, { permissions: STEWARD_PERMISSIONS, repositories: "all" });
  const dataDir = await mkdtemp(join(tmpdir(), "steward-secrets-"));
  const config = loadConfig({ ...h.env, PRIVATE_KEY: undefined, STEWARD_DATA_DIR: dataDir, LOG_LEVEL: "silent" });
  const newClient = () =>
    createOctokitFactory({
      config,
      logger: pino({ level: "silent" }),
      coordination: inProcessCoordination(),
      writeIntervalMs: 0,
      retries: 0,
    }).octokitFor(inst.id);
  const octokit = await newClient();
  const store = openSqliteStore(dataDir);
  // Policy validation reads the service's own environment, as in production.
  // What the operator exposes to the organisation: the tests' variables and temporary files.
  process.env.STEWARD_SECRET_SOURCES = `${ORG}=env:STEWARD_SECRET_,file:${tmpdir()}`;
  Object.assign(process.env, opts.env ?? {});
  const env = process.env;
  const laneId = `${h.url}#${inst.id}#${lane++}`;
  const api = asRequester(octokit);
  const world: World = {
    h,
    api,
    octokit,
    newClient,
    laneId,
    installationId: inst.id,
    store,
    dataDir,
    env,
    pushPolicy(yaml) {
      h.control.pushFiles({ owner: ORG, repo: ADMIN, files: { [POLICY]: yaml }, message: "policy" });
    },
    async sync(o = {}) {
      const outcome: OrganisationOutcome = await syncOrganisation({
        api,
        store: store.kv,
        org: ORG,
        adminRepo: ADMIN,
        dataDir,
        laneId,
        env,
        ...o,
        fanOut: { concurrency: 8, ...o.fanOut },
      });
      if (outcome.status !== "synced") throw new Error(`sync did not run: ${JSON.stringify(outcome)}`);
      return outcome.result;
    },
    charged() {
      return h.state.rateLimiter.snapshot()[`installation:${inst.id}`]?.used ?? 0;
    },
    mark() {
      const from = h.hub.requests.length;
      return () =>
        (
          h.control.requests().slice(from) as {
            method: string;
            path: string;
            query: string;
            status: number;
            auth: string;
          }[]
        )
          .filter((r) => r.auth === "installation")
          .map(({ method, path, query, status }) => ({ method, path, query, status }));
    },
    async close() {
      syncReads.clear(laneId);
      store.close();
      await h.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return world;
}
