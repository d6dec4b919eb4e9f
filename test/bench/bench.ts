// What `npm run bench` measures (docs/bench.md says why): durable intake against the durable peer
// and in-memory Probot at 1, 10 and 50 connections with each server's peak memory, a burst, and
// end-to-end answers against the sandbox hub. Every server runs in its own process; they take
// turns level by level, so the two sides of a ratio are measured a few seconds apart.
import { existsSync } from "node:fs";
import { Redis } from "ioredis";
import pg from "pg";
import { openPostgresStore } from "../../src/store/postgres/store.js";
import { openRedisStore } from "../../src/store/redis/store.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { benchConsole, sqliteDir, type ConsoleOptions, type ConsoleRow, type StoreUnderTest } from "./console.js";
import { benchEndToEnd, type E2eRow } from "./e2e.js";
import { runLoadModel, type LoadModelResults } from "./replay.js";
import { runLoad, SECRET, signedPayloads, type LoadResult } from "./load.js";
import { startServer, type ServerUnderTest } from "./servers/child.js";

export interface BenchOptions {
  /** Seconds of load at each level. */
  seconds: number;
  connections: number[];
  burst: { deliveries: number; connections: number };
  /** Runs of each end-to-end flow. */
  e2eRuns: number;
  /** Deliveries kept for the console's pages, and loads of each page. */
  console: ConsoleOptions;
  /** Repositories of the load model's sample (docs/scale.md). */
  modelRepos: number;
}

export const FULL: BenchOptions = {
  seconds: 10,
  connections: [1, 10, 50],
  burst: { deliveries: 20_000, connections: 200 },
  e2eRuns: 50,
  console: { deliveries: 100_000, loads: 20 },
  modelRepos: 500,
};

export const STEWARD = "Steward (SQLite)";
export const STEWARD_REDIS = "Steward (Redis)";
export const STEWARD_POSTGRES = "Steward (PostgreSQL)";
export const PEER = "Probot + BullMQ (durable peer)";
export const PROBOT = "Probot (in memory)";

export interface Contender {
  name: string;
  levels: LoadResult[];
  /** Peak resident memory over the intake run, bytes. */
  peakRss: number;
}

export interface BenchResults {
  intake: Contender[];
  burst: LoadResult;
  e2e: E2eRow[];
  console: ConsoleRow[];
  scale: LoadModelResults;
  /** What could not be measured, and why. */
  notes: string[];
}

const REDIS = "redis://127.0.0.1:6379";
const POSTGRES = "postgres://postgres@127.0.0.1:5432";

/** A database of its own when this checkout has a PostgreSQL store; undefined otherwise. */
async function postgresDatabase(name: string) {
  if (!existsSync(new URL("../../src/store/postgres/", import.meta.url))) return undefined;
  const query = async (database: string, sql: string) => {
    const client = new pg.Client({ connectionString: `${POSTGRES}/${database}` });
    await client.connect();
    return client.query(sql).finally(() => client.end());
  };
  await query("postgres", `CREATE DATABASE ${name}`);
  return {
    url: `${POSTGRES}/${name}`,
    query: async (sql: string) => void (await query(name, sql)),
    /** Whether Steward made its tables there, so that it runs on it. */
    used: async () =>
      (
        await query(
          name,
          `SELECT 1 FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`,
        )
      ).rowCount! > 0,
    drop: () => query("postgres", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function deleteRedisKeys(pattern: string): Promise<void> {
  const redis = new Redis(REDIS);
  for await (const keys of redis.scanStream({ match: pattern, count: 1000 }))
    if ((keys as string[]).length) await redis.unlink(...(keys as string[]));
  redis.disconnect();
}

/**
 * The intake run: every contender (or those named in `only`) at each level, taking turns.
 * `npm run bench -- --postgres-intake` runs it alone for Steward on PostgreSQL and the durable peer.
 */
export async function runIntake(
  o: BenchOptions,
  log: (line: string) => void,
  only?: string[],
): Promise<Pick<BenchResults, "intake" | "notes">> {
  const payloads = signedPayloads();
  const tag = `bench_${process.pid}`;
  const postgres = await postgresDatabase(tag);
  const env = { WEBHOOK_SECRET: SECRET };
  const all: { name: string; server: "steward" | "probot"; env: Record<string, string> }[] = [
    { name: STEWARD, server: "steward", env },
    {
      name: STEWARD_REDIS,
      server: "steward",
      env: { ...env, STEWARD_REDIS_URL: REDIS, BENCH_PREFIX: `${tag}_steward` },
    },
    ...(postgres
      ? [
          {
            name: STEWARD_POSTGRES,
            server: "steward" as const,
            env: { ...env, STEWARD_POSTGRES_URL: postgres.url },
          },
        ]
      : []),
    { name: PEER, server: "probot", env: { ...env, BENCH_QUEUE: "deliveries", BENCH_PREFIX: `${tag}_bullmq` } },
    { name: PROBOT, server: "probot", env },
  ];
  const contenders = only ? all.filter((c) => only.includes(c.name)) : all;
  const servers = new Map<string, ServerUnderTest>();
  const notes: string[] = [];
  try {
    const intake: Contender[] = [];
    for (const c of contenders) {
      // The PostgreSQL store is new: a checkout where it does not start yet still measures the rest.
      const server = await startServer(c.server, c.env).catch((error: unknown) => {
        if (c.env.STEWARD_POSTGRES_URL === undefined) throw error;
        notes.push(`${c.name} did not start (${String(error)}): no row.`);
        return undefined;
      });
      if (!server) continue;
      if (c.env.STEWARD_POSTGRES_URL !== undefined && !(await postgres?.used())) {
        notes.push(`${c.name} made no tables in its database (STEWARD_POSTGRES_URL not taken yet?): no row.`);
        await server.stop();
        continue;
      }
      servers.set(c.name, server);
      // Warm-up: start-up, JIT and connections are not what is measured.
      await runLoad({ url: server.url, payloads, connections: 10, seconds: Math.min(2, o.seconds) });
      await server.idle();
      intake.push({ name: c.name, levels: [], peakRss: 0 });
    }
    for (const connections of o.connections) {
      for (const c of intake) {
        const server = servers.get(c.name)!;
        const r = await runLoad({ url: server.url, payloads, connections, seconds: o.seconds });
        // The worker catches up before the next run, so no backlog leaks into it.
        c.peakRss = await server.idle();
        c.levels.push(r);
        log(
          `${c.name}, ${connections} connections: ${r.rps.toFixed(0)}/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${r.refused} refused, ${r.errors} errors`,
        );
      }
    }
    return { intake, notes };
  } finally {
    for (const server of servers.values()) await server.stop();
    await deleteRedisKeys(`*${tag}*`);
    await postgres?.drop();
  }
}

export async function runBench(o: BenchOptions, log: (line: string) => void): Promise<BenchResults> {
  const { intake, notes } = await runIntake(o, log);
  const payloads = signedPayloads();
  const env = { WEBHOOK_SECRET: SECRET };
  const servers = new Map<string, ServerUnderTest>();
  try {
    const steward = await startServer("steward", env);
    servers.set("burst", steward);
    await runLoad({ url: steward.url, payloads, connections: 10, seconds: 1 });
    await steward.idle();
    // GitHub gives up on a delivery not answered within 10 s: so does the burst's client.
    const burst = await runLoad({
      url: steward.url,
      payloads,
      connections: o.burst.connections,
      amount: o.burst.deliveries,
      timeoutSeconds: 10,
    });
    log(
      `burst: ${burst.answered} of ${o.burst.deliveries} answered in ${burst.seconds.toFixed(1)} s, p99 ${burst.p99.toFixed(0)} ms, ${burst.refused} refused, ${burst.errors} errors`,
    );
    await steward.stop();
    servers.clear();

    const e2e = await benchEndToEnd(o.e2eRuns);
    for (const row of e2e)
      log(
        `${row.server}, ${row.flow}: ${row.answered} of ${row.sent} answered, p50 ${row.p50.toFixed(1)} ms, p99 ${row.p99.toFixed(1)} ms`,
      );
    const consoleRows = await benchConsoleOnEveryStore(o, log);
    const scale = await runLoadModel(o.modelRepos, log);
    return { intake, burst, e2e, console: consoleRows, scale, notes };
  } finally {
    for (const server of servers.values()) await server.stop();
  }
}

/** The console's pages on SQLite, Redis and (when this checkout has it) PostgreSQL, each seeded afresh. */
export async function benchConsoleOnEveryStore(o: BenchOptions, log: (line: string) => void) {
  const sqlite = sqliteDir();
  const prefix = `bench_${process.pid}_console`;
  const postgres = await postgresDatabase(prefix);
  const stores: StoreUnderTest[] = [
    {
      name: "SQLite",
      open: async () => openSqliteStore(sqlite.dir),
      env: { BENCH_DATA_DIR: sqlite.dir },
    },
    {
      name: "Redis",
      open: () => openRedisStore(REDIS, { prefix: `{${prefix}}:` }),
      env: { STEWARD_REDIS_URL: REDIS, BENCH_PREFIX: prefix },
    },
    ...(postgres
      ? [
          {
            name: "PostgreSQL",
            open: () => openPostgresStore(postgres.url),
            env: { STEWARD_POSTGRES_URL: postgres.url },
          },
        ]
      : []),
  ];
  try {
    const only = process.env.BENCH_CONSOLE_STORES?.split(",");
    return await benchConsole(o.console, only ? stores.filter((s) => only.includes(s.name)) : stores, log);
  } finally {
    sqlite.drop();
    await deleteRedisKeys(`*${prefix}*`);
    await postgres?.drop();
  }
}
