// Section 3: API requests of a secrets sync, Steward's sync engine against the naive approach
// (public key + PUT for every secret, PATCH/POST for every variable, in every repository),
// each against its own fresh sandbox hub that records every request. Reads are split into
// those that cost rate limit and conditional ones answered 304 (free, as on GitHub); the split
// is taken from the hub's request log and checked against the hub's own rate-limit bucket.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProbotOctokit } from "probot";
import { createHub, STEWARD_PERMISSIONS, type HubHandle } from "../../src/sandbox/hub.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { asRequester, statusOf, syncReads, type Requester } from "../../handlers/secrets/api.js";
import { syncOrganisation } from "../../handlers/secrets/organisation.js";
import { seal } from "../../handlers/secrets/seal.js";

export interface CostRow {
  repositories: number;
  /** "steward shared": the same policy with `share: org` on every entry (one organisation target each). */
  approach: "steward" | "steward shared" | "naive";
  /**
   * "no change": right after the first run, whose writes changed every list; "no change again":
   * nothing changed since the last sync (the steady state); "no change, new token": the same
   * right after the installation token was renewed (GitHub's ETags are per token).
   */
  run: "first" | "no change" | "no change again" | "no change, new token" | "one value changed";
  /** Every GET sent, conditional or not. */
  reads: number;
  /** GETs that cost rate limit (everything but the 304s). */
  rateLimitedReads: number;
  /** Conditional GETs answered 304 Not Modified: free of rate limit. */
  notModified: number;
  writes: number;
  perRepoReads: number;
  perRepoRateLimitedReads: number;
  /** When a run makes only a few writes, which ones (method and route), to explain them. */
  fewWrites?: string[];
}

const ORG = "acme";
const ADMIN = "admin";
const SECRETS = ["NPM_TOKEN", "DOCKER_TOKEN", "SENTRY_DSN", "SLACK_WEBHOOK", "SIGNING_KEY"];
const VARIABLES: Record<string, string> = { REGION: "eu-west-1", TIER: "standard", NODE_VERSION: "20" };
const envName = (secret: string) => `BENCH_SECRET_${secret}`;

function policyYaml(shared: boolean): string {
  const share = shared ? ", share: org" : "";
  const secrets = SECRETS.map((s) => `  ${s}: { from: "env:${envName(s)}", repositories: ["repo-*"]${share} }`).join("\n");
  const variables = Object.entries(VARIABLES).map(([k, v]) => `  ${k}: { value: "${v}", repositories: ["repo-*"]${share} }`).join("\n");
  return `secrets:\n${secrets}\nvariables:\n${variables}\n`;
}

interface World {
  h: HubHandle;
  api: Requester;
  installationId: number;
  repos: string[];
  /** A new client, so a new installation token: what a sync an hour or more later uses. */
  renewToken(): void;
  close(): Promise<void>;
}

async function world(n: number, shared: boolean): Promise<World> {
  // No rate limit in the way: the bench counts requests, it does not wait for a reset.
  const h = await createHub({ seed: "empty", rateLimit: 10_000_000 });
  h.control.createOrg(ORG, { members: ["octo-admin"] });
  h.control.createRepo({ owner: ORG, name: ADMIN, private: true });
  const repos = Array.from({ length: n }, (_, i) => `repo-${String(i).padStart(4, "0")}`);
  for (const name of repos) h.control.createRepo({ owner: ORG, name, private: true });
  const inst = h.control.install(ORG, { permissions: STEWARD_PERMISSIONS, repositories: "all" });
  const client = () =>
    asRequester(
      new ProbotOctokit({
        auth: { appId: Number(h.env.APP_ID), privateKey: h.env.PRIVATE_KEY, installationId: inst.id },
        baseUrl: h.url,
        throttle: { enabled: false },
        retry: { enabled: false },
      } as ConstructorParameters<typeof ProbotOctokit>[0]),
    );
  h.control.pushFiles({ owner: ORG, repo: ADMIN, files: { ".github/steward/secrets.yml": policyYaml(shared) }, message: "secrets policy" });
  const w: World = {
    h,
    api: client(),
    installationId: inst.id,
    repos,
    renewToken: () => {
      w.api = client();
    },
    close: () => h.close(),
  };
  return w;
}

/** What the installation's rate-limit bucket on the hub has charged so far. */
function charged(w: World): number {
  return w.h.state.rateLimiter.snapshot()[`installation:${w.installationId}`]?.used ?? 0;
}

/**
 * Installation requests made while `run` ran: GETs are reads, everything else writes; a read
 * answered 304 is free. The hub's bucket must have charged exactly the others.
 */
async function counted(w: World, run: () => Promise<void>): Promise<{ reads: number; rateLimitedReads: number; notModified: number; writes: number; fewWrites?: string[] }> {
  const from = w.h.control.requests().length;
  const chargedBefore = charged(w);
  await run();
  const made = (w.h.control.requests().slice(from) as { method: string; path: string; route?: string; auth: string; status: number }[]).filter((r) => r.auth === "installation");
  const writes = made.filter((r) => r.method !== "GET");
  const reads = made.length - writes.length;
  const notModified = made.filter((r) => r.method === "GET" && r.status === 304).length;
  const rateLimitedReads = reads - notModified;
  const bucket = charged(w) - chargedBefore;
  if (bucket !== rateLimitedReads + writes.length) {
    throw new Error(`the hub charged ${bucket} requests, the log says ${rateLimitedReads} reads and ${writes.length} writes`);
  }
  return {
    reads,
    rateLimitedReads,
    notModified,
    writes: writes.length,
    ...(writes.length > 0 && writes.length <= 5 ? { fewWrites: writes.map((r) => `${r.method} ${r.route ?? r.path} ${r.status}`) } : {}),
  };
}

function setValues(round: number, changed?: string): void {
  for (const s of SECRETS) process.env[envName(s)] = `${s.toLowerCase()}-value-${s === changed ? round : 0}`;
}

/** In parallel, at most `limit` at a time (the same fan-out Steward's sync uses by default). */
async function eachLimited<T>(items: readonly T[], limit: number, job: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await job(items[next++]!);
  }));
}

/** The naive sync: list the repositories, then for each: its public key, a PUT per secret, a PATCH (POST when missing) per variable. */
async function naiveSync(w: World, concurrency: number): Promise<void> {
  const repos: string[] = [];
  for (let page = 1; ; page++) {
    const res = await w.api.request("GET /installation/repositories", { per_page: 100, page });
    const names = (res.data.repositories as { name: string }[]).map((r) => r.name).filter((r) => r !== ADMIN);
    repos.push(...names);
    if (res.data.repositories.length < 100) break;
  }
  await eachLimited(repos, concurrency, async (repo) => {
    const key = (await w.api.request("GET /repos/{owner}/{repo}/actions/secrets/public-key", { owner: ORG, repo })).data as { key_id: string; key: string };
    for (const s of SECRETS) {
      const encrypted_value = await seal(process.env[envName(s)]!, key.key);
      await w.api.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", { owner: ORG, repo, secret_name: s, encrypted_value, key_id: key.key_id });
    }
    for (const [name, value] of Object.entries(VARIABLES)) {
      try {
        await w.api.request("PATCH /repos/{owner}/{repo}/actions/variables/{name}", { owner: ORG, repo, name, value });
      } catch (e) {
        if (statusOf(e) !== 404) throw e;
        await w.api.request("POST /repos/{owner}/{repo}/actions/variables", { owner: ORG, repo, name, value });
      }
    }
  });
}

export async function benchApiCost(o: { sizes: number[]; concurrency: number }, log: (s: string) => void): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  const saved = Object.fromEntries(SECRETS.map((s) => [envName(s), process.env[envName(s)]]));
  try {
    for (const n of o.sizes) {
      for (const approach of ["steward", "steward shared", "naive"] as const) {
        const w = await world(n, approach === "steward shared");
        const dataDir = await mkdtemp(join(tmpdir(), "steward-bench-secrets-"));
        const store = openSqliteStore(dataDir);
        const laneId = `${w.h.url}#${w.installationId}#bench`;
        const once = async () => {
          if (approach === "naive") return naiveSync(w, o.concurrency);
          const outcome = await syncOrganisation({ api: w.api, store: store.kv, org: ORG, adminRepo: ADMIN, dataDir, laneId, env: { ...process.env, STEWARD_SECRET_SOURCES: `${ORG}=env:BENCH_SECRET_` }, fanOut: { concurrency: o.concurrency } });
          if (outcome.status !== "synced" || outcome.result.failures.length > 0) throw new Error(`sync failed: ${JSON.stringify(outcome.status === "synced" ? outcome.result.failures.slice(0, 3) : outcome).slice(0, 800)}`);
        };
        try {
          const runs = [
            { run: "first" as const, values: () => setValues(0) },
            { run: "no change" as const, values: () => setValues(0) },
            { run: "no change again" as const, values: () => setValues(0) },
            { run: "no change, new token" as const, values: () => (setValues(0), w.renewToken()) },
            { run: "one value changed" as const, values: () => setValues(1, SECRETS[0]) },
          ];
          for (const r of runs) {
            r.values();
            const c = await counted(w, once);
            rows.push({ repositories: n, approach, run: r.run, ...c, perRepoReads: c.reads / n, perRepoRateLimitedReads: c.rateLimitedReads / n });
            log(
              `  N=${n} ${approach} ${r.run}: ${c.reads} reads (${c.rateLimitedReads} rate-limited, ${c.notModified} answered 304), ${c.writes} writes` +
                (c.fewWrites ? ` (${c.fewWrites.join(", ")})` : ""),
            );
          }
        } finally {
          syncReads.clear(laneId);
          store.close();
          await w.close();
          await rm(dataDir, { recursive: true, force: true });
        }
      }
    }
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  return rows;
}
