// Console pages with 100,000 deliveries stored, on SQLite and on Redis: each page fetched over
// real HTTP by a signed-in owner (and the deliveries list by a member who sees 3 of the 4
// repositories), after warm-up; the target is under 200 ms per page. Never part of `npm test`.
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { stringify } from "yaml";
import { createHub } from "../../src/sandbox/hub.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { openRedisStore } from "../../src/store/redis/store.js";
import { createConsole } from "../../src/console/console.js";
import { ApiBudget } from "../../src/console/budget.js";
import type { StewardStore } from "../../src/store/contract.js";
import { generatedConfigFiles } from "../../src/policy/schema.js";
import { builtinHandlers } from "../../handlers/index.js";
import { signIn, type Visitor } from "../console/session.js";

export interface ConsolePageRow {
  store: "sqlite" | "redis";
  page: string;
  who: "owner" | "member";
  p50: number;
  p99: number;
  max: number;
}

export interface ConsoleBenchResult {
  deliveries: number;
  fillSeconds: Record<string, number>;
  rows: ConsolePageRow[];
  skipped: string[];
}

type BenchStore = StewardStore;

const REPOS = ["acme/web", "acme/api", "acme/service-billing", "acme/.github"];
const EVENTS = ["push", "workflow_run", "pull_request", "check_suite", "deployment_protection_rule"];
const HANDLERS = ["rerun", "checks", "deployments", "secrets"];
const DAY_MS = 86_400_000;

/** Deterministic: the same corpus every run. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Record `n` deliveries over the last day, then run them through the queue: ~1% dead, the rest done, each with handler outcomes. */
async function fill(store: BenchStore, n: number, log: (s: string) => void): Promise<void> {
  const random = rng(42);
  const now = Date.now();
  const body = JSON.stringify({ action: "completed", note: "bench" });
  for (let i = 0; i < n; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      const event = EVENTS[Math.floor(random() * EVENTS.length)]!;
      batch.push(store.deliveries.record({
        id: `bench-${String(j).padStart(6, "0")}`,
        event,
        action: "completed",
        installationId: 1,
        repository: REPOS[Math.floor(random() * REPOS.length)]!,
        headers: { "x-github-event": event, "content-type": "application/json" },
        payload: body,
        receivedAt: new Date(now - DAY_MS + Math.floor((j / n) * DAY_MS)),
      }));
    }
    await Promise.all(batch);
  }
  log(`    recorded ${n}`);
  let finished = 0;
  for (;;) {
    const claims = await store.deliveries.claimDeliveries(600_000, 500);
    if (claims.length === 0) break;
    await Promise.all(claims.map(async (c) => {
      const dead = random() < 0.01;
      const handler = HANDLERS[Math.floor(random() * HANDLERS.length)]!;
      await store.deliveries.recordOutcome(c.token, c.delivery.id, handler, dead ? { status: "failed", error: "gave up", retryable: false } : { status: "done", summary: "decided: nothing to do (bench)" }, 0.002);
      await store.deliveries.recordOutcome(c.token, c.delivery.id, "checks", { status: "skipped", reason: "not a pull request" }, 0.001);
      await store.deliveries.finishDelivery(c.token, c.delivery.id, dead ? { status: "dead", lastError: "gave up" } : { status: "done" });
    }));
    finished += claims.length;
    if (finished % 20_000 < claims.length) log(`    finished ${finished}`);
  }
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function measure(v: Visitor, path: string, times: number): Promise<{ p50: number; p99: number; max: number }> {
  for (let i = 0; i < 3; i++) await v.request(path);
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    const res = await v.request(path);
    ms.push(performance.now() - t);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  }
  ms.sort((a, b) => a - b);
  return { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), max: ms[ms.length - 1]! };
}

async function benchOne(name: "sqlite" | "redis", open: () => Promise<{ store: BenchStore; dispose(): Promise<void> }>, n: number, times: number, log: (s: string) => void) {
  const hub = await createHub();
  const { store, dispose } = await open();
  let server: Server | undefined;
  try {
    const started = performance.now();
    await fill(store, n, log);
    const fillSeconds = (performance.now() - started) / 1000;
    let base = "";
    const consoleRoutes = createConsole({
      store,
      depth: () => store.leases.pendingWork(new Date()),
      replay: async (id) => void (await store.deliveries.replayDelivery(id)),
      handlers: builtinHandlers.map((h) => h.name),
      appId: Number(hub.env.APP_ID),
      apiUrl: hub.url,
      oauth: { clientId: hub.env.GITHUB_CLIENT_ID, clientSecret: hub.env.GITHUB_CLIENT_SECRET },
      sessionSecret: "bench-session-secret-bench-session-secret",
      baseUrl: () => base,
      schemaJson: generatedConfigFiles(builtinHandlers, (x) => stringify(x)).get("steward.schema.json")!,
      budget: new ApiBudget(),
      logger: pino({ level: "silent" }),
    });
    server = createServer((req, res) => void consoleRoutes.handle(req, res));
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const owner = await signIn(base, "octo-admin");
    const member = await signIn(base, "dev-dana");
    const some = (await store.browse.browseDeliveries({ limit: 1, repository: "acme/web" })).items[0]!.id;
    // A cursor 20 pages deep: keyset pages cost the same anywhere.
    let deep = "/console/deliveries";
    for (let i = 0; i < 20; i++) {
      const text = (await owner.request(deep)).text;
      const next = /href="(\/console\/deliveries\?[^"]*cursor=[^"]+)" rel="next"/.exec(text)?.[1];
      if (!next) break;
      deep = next.replace(/&#38;/g, "&");
    }
    const pages: [string, string, Visitor, "owner" | "member"][] = [
      ["overview", "/console", owner, "owner"],
      ["deliveries", "/console/deliveries", owner, "owner"],
      ["deliveries, 20 pages deep", deep, owner, "owner"],
      ["deliveries by repository", "/console/deliveries?repository=acme%2Fapi", owner, "owner"],
      ["deliveries by event", "/console/deliveries?event=deployment_protection_rule", owner, "owner"],
      ["deliveries: handler outcome failed (rare)", "/console/deliveries?handler=rerun&outcome=failed", owner, "owner"],
      ["deliveries in a 1 h window", `/console/deliveries?since=${new Date(Date.now() - DAY_MS / 2).toISOString().slice(0, 16)}&until=${new Date(Date.now() - DAY_MS / 2 + 3_600_000).toISOString().slice(0, 16)}`, owner, "owner"],
      ["one delivery", `/console/deliveries/${some}`, owner, "owner"],
      ["dead letters", "/console/dead", owner, "owner"],
      ["deployments", "/console/deployments", owner, "owner"],
      ["secrets", "/console/secrets", owner, "owner"],
      ["overview", "/console", member, "member"],
      ["deliveries (3 of 4 repositories)", "/console/deliveries", member, "member"],
    ];
    const rows: ConsolePageRow[] = [];
    for (const [page, path, who, role] of pages) {
      const m = await measure(who, path, times);
      rows.push({ store: name, page, who: role, ...m });
      log(`    ${page} (${role}): p50 ${m.p50.toFixed(1)} ms, p99 ${m.p99.toFixed(1)} ms, max ${m.max.toFixed(1)} ms`);
    }
    consoleRoutes.close();
    return { rows, fillSeconds };
  } finally {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    await dispose();
    await hub.close();
  }
}

export async function benchConsole(opts: { deliveries: number; times: number; redisUrl?: string }, log: (s: string) => void): Promise<ConsoleBenchResult> {
  const result: ConsoleBenchResult = { deliveries: opts.deliveries, fillSeconds: {}, rows: [], skipped: [] };
  log(`  sqlite: filling ${opts.deliveries} deliveries`);
  const sqlite = await benchOne("sqlite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "steward-console-bench-"));
    const store = openSqliteStore(dir);
    return { store, dispose: async () => { store.close(); rmSync(dir, { recursive: true, force: true }); } };
  }, opts.deliveries, opts.times, log);
  result.rows.push(...sqlite.rows);
  result.fillSeconds.sqlite = sqlite.fillSeconds;
  const url = opts.redisUrl ?? process.env.STEWARD_TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";
  try {
    const prefix = `steward-bench:${process.pid}:${Date.now()}:`;
    log(`  redis: filling ${opts.deliveries} deliveries`);
    const redis = await benchOne("redis", async () => {
      const store = await openRedisStore(url, { prefix });
      return {
        store,
        dispose: async () => {
          const { Redis } = await import("ioredis");
          const client = new Redis(url);
          let cursor = "0";
          do {
            const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
            cursor = next;
            if (keys.length) await client.del(...keys);
          } while (cursor !== "0");
          client.disconnect();
          await store.close();
        },
      };
    }, opts.deliveries, opts.times, log);
    result.rows.push(...redis.rows);
    result.fillSeconds.redis = redis.fillSeconds;
  } catch (error) {
    result.skipped.push(`redis: ${(error as Error).message}`);
  }
  return result;
}

export function consoleTable(r: ConsoleBenchResult): string {
  const lines = ["| Store | Page | Reader | p50 ms | p99 ms | max ms | Under 200 ms |", "|---|---|---|---|---|---|---|"];
  for (const x of r.rows) lines.push(`| ${x.store} | ${x.page} | ${x.who} | ${x.p50.toFixed(1)} | ${x.p99.toFixed(1)} | ${x.max.toFixed(1)} | ${x.max < 200 ? "yes" : "**no**"} |`);
  return lines.join("\n");
}

// `npx tsx test/bench/console.ts [deliveries]`: this section alone.
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\/test\//, "/test/"))) {
  const n = Number(process.argv[2] ?? 100_000);
  const r = await benchConsole({ deliveries: n, times: 100 }, (s) => process.stderr.write(`${s}\n`));
  process.stdout.write(`${consoleTable(r)}\n${r.skipped.map((s) => `skipped ${s}`).join("\n")}\n`);
  process.exit(0);
}
