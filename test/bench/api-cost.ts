// Section 3: API requests of a secrets sync, Steward's sync engine against the naive approach
// (public key + PUT for every secret, PATCH/POST for every variable, in every repository),
// each against its own fresh sandbox hub that records every request.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProbotOctokit } from "probot";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { STEWARD_PERMISSIONS } from "../../src/sandbox/seed/demo.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { asRequester, statusOf, type Requester } from "../../handlers/secrets/api.js";
import { syncOrganisation } from "../../handlers/secrets/organisation.js";
import { seal } from "../../handlers/secrets/seal.js";

export interface CostRow {
  repositories: number;
  approach: "steward" | "naive";
  run: "first" | "no change" | "one value changed";
  reads: number;
  writes: number;
  perRepoReads: number;
  /** When a run makes only a few writes, which ones (method and route), to explain them. */
  fewWrites?: string[];
}

const ORG = "acme";
const ADMIN = "admin";
const SECRETS = ["NPM_TOKEN", "DOCKER_TOKEN", "SENTRY_DSN", "SLACK_WEBHOOK", "SIGNING_KEY"];
const VARIABLES: Record<string, string> = { REGION: "eu-west-1", TIER: "standard", NODE_VERSION: "20" };
const envName = (secret: string) => `BENCH_SECRET_${secret}`;

function policyYaml(): string {
  const secrets = SECRETS.map((s) => `  ${s}: { from: "env:${envName(s)}", repositories: ["repo-*"] }`).join("\n");
  const variables = Object.entries(VARIABLES).map(([k, v]) => `  ${k}: { value: "${v}", repositories: ["repo-*"] }`).join("\n");
  return `secrets:\n${secrets}\nvariables:\n${variables}\n`;
}

interface World {
  h: HubHandle;
  api: Requester;
  installationId: number;
  repos: string[];
  close(): Promise<void>;
}

async function world(n: number): Promise<World> {
  // No rate limit in the way: the bench counts requests, it does not wait for a reset.
  const h = await createHub({ seed: "empty", rateLimit: 10_000_000 });
  h.control.createOrg(ORG, { members: ["octo-admin"] });
  h.control.createRepo({ owner: ORG, name: ADMIN, private: true });
  const repos = Array.from({ length: n }, (_, i) => `repo-${String(i).padStart(4, "0")}`);
  for (const name of repos) h.control.createRepo({ owner: ORG, name, private: true });
  const inst = h.control.install(ORG, { permissions: STEWARD_PERMISSIONS, repositories: "all" });
  const octokit = new ProbotOctokit({
    auth: { appId: Number(h.env.APP_ID), privateKey: h.env.PRIVATE_KEY, installationId: inst.id },
    baseUrl: h.url,
    throttle: { enabled: false },
    retry: { enabled: false },
  } as ConstructorParameters<typeof ProbotOctokit>[0]);
  h.control.pushFiles({ owner: ORG, repo: ADMIN, files: { ".github/steward/secrets.yml": policyYaml() }, message: "secrets policy" });
  return { h, api: asRequester(octokit), installationId: inst.id, repos, close: () => h.close() };
}

/** Installation requests made while `run` ran: GETs are reads, everything else writes. */
async function counted(w: World, run: () => Promise<void>): Promise<{ reads: number; writes: number; fewWrites?: string[] }> {
  const from = w.h.control.requests().length;
  await run();
  const made = (w.h.control.requests().slice(from) as { method: string; path: string; route?: string; auth: string; status: number }[]).filter((r) => r.auth === "installation");
  const writes = made.filter((r) => r.method !== "GET");
  return {
    reads: made.length - writes.length,
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
      for (const approach of ["steward", "naive"] as const) {
        const w = await world(n);
        const dataDir = await mkdtemp(join(tmpdir(), "steward-bench-secrets-"));
        const store = openSqliteStore(dataDir);
        const laneId = `${w.h.url}#${w.installationId}#bench`;
        const once = async () => {
          if (approach === "naive") return naiveSync(w, o.concurrency);
          const outcome = await syncOrganisation({ api: w.api, store, org: ORG, adminRepo: ADMIN, dataDir, laneId, env: process.env, fanOut: { concurrency: o.concurrency } });
          if (outcome.status !== "synced" || outcome.result.failures.length > 0) throw new Error(`sync failed: ${JSON.stringify(outcome).slice(0, 500)}`);
        };
        try {
          const runs = [
            { run: "first" as const, values: () => setValues(0) },
            { run: "no change" as const, values: () => setValues(0) },
            { run: "one value changed" as const, values: () => setValues(1, SECRETS[0]) },
          ];
          for (const r of runs) {
            r.values();
            const c = await counted(w, once);
            rows.push({ repositories: n, approach, run: r.run, ...c, perRepoReads: c.reads / n });
            log(`  N=${n} ${approach} ${r.run}: ${c.reads} reads, ${c.writes} writes${c.fewWrites ? ` (${c.fewWrites.join(", ")})` : ""}`);
          }
        } finally {
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
