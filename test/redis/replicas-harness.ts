// Several Steward replicas (child processes) on one Redis behind a small round-robin load
// balancer, driven by the sandbox hub: workflow runs keep arriving, each owing one re-run
// and one check run (writes of one installation, so they share one write slot). The harness
// can kill, on purpose, the replica that holds the installation's write slot: it reads the
// slot's holder from Redis (a write-slot lease names its process), SIGKILLs that replica, and
// counts the kill only if Redis still names the dead process as the holder afterwards. The hub's own records judge everything else: when
// writes resumed, how far apart they were, how many tokens were minted, and whether every
// run got its effects exactly once.
import type { ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { replicaKeys, type ReplicaEntry } from "../../src/coordination/redis/replicas.js";
import { slotKey } from "../../src/coordination/redis/write-slots.js";
import {
  awaitRerunEffects,
  setUpRetryableRepo,
  spawnSteward,
  startRetryableRun,
  tallyRerunEffects,
} from "../torture/crash-harness.js";
import { dropPrefix, prefixPattern, redisUrl, scanKeys, uniquePrefix } from "./support.js";
import { connectRedis, type RedisClient } from "../../src/store/redis/connect.js";

const REPLICA = resolve(import.meta.dirname, "fixtures/steward-replica.ts");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ReplicaRunOptions {
  /** The Redis the replicas share (default: the test Redis; a Redis Cluster's node for the cluster test). */
  url?: string;
  replicas: number;
  /** Kills of the write slot's holder (each followed by a restart of the victim). */
  holderKills: number;
  writeIntervalMs: number;
  /** A new run every this often while the kills go on. */
  runEveryMs: number;
  /** At least this many runs in all. */
  minRuns: number;
  /** Keep the runs arriving at least this long (compressed-time token runs). */
  minDurationMs?: number;
  tokens?: { format?: "classic" | "stateless"; ttlMs?: number };
  onOutput?(label: string, text: string): void;
  log?(line: string): void;
  deadlineMs?: number;
}

export interface HolderKill {
  pid: number;
  /** Redis still named the killed replica as the slot's holder after the kill. */
  confirmed: boolean;
  /** From the kill to the next write of the installation the hub received. */
  resumedAfterMs: number | undefined;
}

export interface ReplicaRunResult {
  runs: number;
  kills: HolderKill[];
  writes: number;
  /** Smallest interval between two writes of the installation, across all replicas (hub clock). */
  minWriteGapMs: number;
  lostEffects: string[];
  duplicatedEffects: string[];
  /** Installation tokens the hub issued for the installation. */
  mints: number;
  /** Tokens the hub issued that appear in plaintext anywhere in the deployment's Redis keys. */
  tokensInRedis: number;
  /** Token-shaped strings in the deployment's Redis keys. */
  tokenShapesInRedis: number;
  /** /metrics of a live replica at the end. */
  metrics: string;
  /** What the registry said while all replicas were up. */
  registry: ReplicaEntry[];
  seconds: number;
}

interface Replica {
  n: number;
  proc: ChildProcess;
  url: Promise<string>;
  exited: Promise<void>;
  alive: boolean;
}

function startReplica(
  hub: HubHandle,
  n: number,
  env: Record<string, string>,
  onOutput: (label: string, text: string) => void,
): Replica {
  const child = spawnSteward(REPLICA, hub, env, `replica #${n}`, onOutput);
  const replica: Replica = { n, ...child, alive: true, url: child.url.then((u) => new URL(u).origin) };
  replica.url.catch(() => undefined);
  void child.exited.then(() => (replica.alive = false));
  return replica;
}

/** Round robin over live replicas; a replica that does not answer is skipped (GitHub would see a 502 only if none does). */
async function startBalancer(replicas: () => Replica[], path: string): Promise<{ url: string; server: Server }> {
  let next = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
      const live = replicas().filter((r) => r.alive);
      for (let i = 0; i < live.length; i++) {
        const target = live[(next++ + i) % live.length]!;
        try {
          const answer = await fetch(`${await target.url}${path}`, {
            method: req.method ?? "POST",
            headers,
            body,
            signal: AbortSignal.timeout(10_000),
          });
          res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "text/plain" });
          res.end(Buffer.from(await answer.arrayBuffer()));
          return;
        } catch {
          // dead or dying: the next one
        }
      }
      res.writeHead(502).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, server };
}

/** Every value under the deployment's keys, as one text (to look for tokens in it). */
async function dumpKeys(redis: RedisClient, patterns: string[]): Promise<string> {
  const parts: string[] = [];
  for (const pattern of patterns) {
    for (const key of await scanKeys(redis, pattern)) {
      const type = await redis.type(key);
      parts.push(key);
      if (type === "string") parts.push((await redis.get(key)) ?? "");
      else if (type === "hash") parts.push(JSON.stringify(await redis.hgetall(key)));
      else if (type === "zset") parts.push(JSON.stringify(await redis.zrange(key, 0, -1, "WITHSCORES")));
      else if (type === "list") parts.push(JSON.stringify(await redis.lrange(key, 0, -1)));
      else if (type === "set") parts.push(JSON.stringify(await redis.smembers(key)));
      else if (type === "stream") parts.push(JSON.stringify(await redis.xrange(key, "-", "+")));
    }
  }
  return parts.join("\n");
}

async function registryOf(redis: RedisClient, prefix: string): Promise<ReplicaEntry[]> {
  const keys = replicaKeys(prefix);
  const ids = await redis.zrange(keys.index, 0, -1);
  if (ids.length === 0) return [];
  return (await redis.mget(ids.map(keys.entry)))
    .filter((t): t is string => t !== null)
    .map((t) => JSON.parse(t) as ReplicaEntry);
}

export async function runReplicas(opts: ReplicaRunOptions): Promise<ReplicaRunResult> {
  const started = Date.now();
  const log = opts.log ?? (() => undefined);
  const onOutput = opts.onOutput ?? (() => undefined);
  const url = opts.url ?? redisUrl;
  const prefix = uniquePrefix();
  const env = {
    STEWARD_REDIS_URL: url,
    STEWARD_TEST_REDIS_PREFIX: prefix,
    STEWARD_TEST_WRITE_INTERVAL_MS: String(opts.writeIntervalMs),
  };
  const hub = await createHub({ randomSeed: 19, ...(opts.tokens ? { tokens: opts.tokens } : {}) });
  const redis = await connectRedis(url, undefined, "steward-test");
  const replicas: Replica[] = [];
  let balancer: Server | undefined;
  try {
    setUpRetryableRepo(hub);
    const installationId = hub.control.installation("acme")!.id;
    let n = 0;
    for (let i = 0; i < opts.replicas; i++) replicas.push(startReplica(hub, ++n, env, onOutput));
    await Promise.all(replicas.map((r) => r.url));
    const lb = await startBalancer(() => replicas, "/api/github/webhooks");
    balancer = lb.server;
    hub.control.setWebhookUrl(lb.url);

    // Runs keep arriving while the slot's holders are killed.
    const runs: { id: number; sha: string }[] = [];
    let arriving = true;
    const arrivals = (async () => {
      while (arriving || runs.length < opts.minRuns || Date.now() - started < (opts.minDurationMs ?? 0)) {
        runs.push(startRetryableRun(hub, runs.length));
        await sleep(opts.runEveryMs);
      }
    })();

    const writesAfter = (t: number) =>
      hub.control
        .requests()
        .filter((r) => r.auth === "installation" && r.method !== "GET" && r.method !== "HEAD" && r.receivedAt > t);
    const slot = slotKey(prefix, String(installationId));
    let registry: ReplicaEntry[] = [];
    const kills: HolderKill[] = [];
    let attempts = 0;
    while (kills.length < opts.holderKills) {
      if (++attempts > opts.holderKills * 10)
        throw new Error(`could not kill a slot holder in ${attempts - 1} attempts`);
      // Find the holder: the slot names it (`host/pid/uuid#turn`); the registry names its process.
      let victim: Replica | undefined;
      let holder: string | undefined;
      const lookUntil = Date.now() + 60_000;
      const entries = await registryOf(redis, prefix);
      if (entries.length === replicas.filter((r) => r.alive).length) registry = entries;
      while (!victim && Date.now() < lookUntil) {
        holder = (await redis.hget(slot, "holder")) ?? undefined;
        const owner = holder?.split("#")[0];
        const pid = owner === undefined ? undefined : Number(owner.split("/")[1]);
        victim = pid === undefined ? undefined : replicas.find((r) => r.alive && r.proc.pid === pid);
        if (!victim) await sleep(5);
      }
      if (!victim) throw new Error("no replica held the write slot for a minute");
      const killedAt = Date.now();
      victim.proc.kill("SIGKILL");
      await victim.exited;
      // The kill landed while it held the slot if the slot still names it (nobody else can take it before it expires).
      const confirmed = (await redis.hget(slot, "holder"))?.split("#")[0] === holder!.split("#")[0];
      // Writes resume once the dead holder's slot is taken back.
      let resumedAfterMs: number | undefined;
      const waitUntil = Date.now() + 60_000;
      while (resumedAfterMs === undefined && Date.now() < waitUntil) {
        const next = writesAfter(killedAt)[0];
        if (next) resumedAfterMs = next.receivedAt - killedAt;
        else await sleep(20);
      }
      if (confirmed) kills.push({ pid: victim.proc.pid!, confirmed, resumedAfterMs });
      log(
        `kill ${kills.length}: replica #${victim.n} (pid ${victim.proc.pid}) held the slot: ${confirmed}; writes resumed after ${resumedAfterMs} ms`,
      );
      // A rolling restart: the victim comes back (and must not mint another token).
      const replacement = startReplica(hub, ++n, env, onOutput);
      replicas[replicas.indexOf(victim)] = replacement;
      await replacement.url;
      await sleep(1_500);
    }
    arriving = false;
    await arrivals;

    await awaitRerunEffects(hub, runs, opts.deadlineMs ?? 120_000, log);
    const live = replicas.find((r) => r.alive)!;
    const metrics = await (await fetch(`${await live.url}/metrics`)).text();

    const { reruns, checks } = tallyRerunEffects(hub);
    const lostEffects: string[] = [];
    const duplicatedEffects: string[] = [];
    for (const r of runs) {
      const k = reruns.get(r.id) ?? 0;
      const c = checks.get(r.sha) ?? 0;
      if (k === 0) lostEffects.push(`re-run of run ${r.id}`);
      if (k > 1) duplicatedEffects.push(`re-run of run ${r.id} x${k}`);
      if (c === 0) lostEffects.push(`check run on ${r.sha}`);
      if (c > 1) duplicatedEffects.push(`check run on ${r.sha} x${c}`);
    }
    const writeRecords = writesAfter(0).sort((a, b) => a.receivedAt - b.receivedAt);
    const writes = writeRecords.map((r) => r.receivedAt);
    const gaps = writes.slice(1).map((t, i) => t - writes[i]!);
    const closest = gaps
      .map((g, i) => ({ g, i }))
      .sort((a, b) => a.g - b.g)
      .slice(0, 3);
    for (const { g, i } of closest)
      log(
        `write gap ${g} ms: ${writeRecords[i]!.method} ${writeRecords[i]!.path} -> ${writeRecords[i + 1]!.method} ${writeRecords[i + 1]!.path}`,
      );
    const dump = await dumpKeys(redis, [prefixPattern(prefix)]);
    const issued = hub.state.tokens.installationTokens();
    return {
      runs: runs.length,
      kills,
      writes: writes.length,
      minWriteGapMs: gaps.length ? Math.min(...gaps) : Infinity,
      lostEffects,
      duplicatedEffects,
      mints: hub.state.tokens.minted.get(installationId) ?? 0,
      tokensInRedis: issued.filter((t) => dump.includes(t)).length,
      tokenShapesInRedis: (dump.match(/\bgh[opsur]_[A-Za-z0-9_.-]{20,}/g) ?? []).length,
      metrics,
      registry,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    for (const r of replicas) if (r.alive) r.proc.kill("SIGTERM");
    await Promise.race([Promise.all(replicas.map((r) => r.exited)), sleep(15_000)]);
    for (const r of replicas) if (r.alive) r.proc.kill("SIGKILL");
    await Promise.all(replicas.map((r) => r.exited));
    hub.control.setWebhookUrl(undefined);
    balancer?.closeAllConnections();
    await new Promise((r) => (balancer ? balancer.close(r) : r(undefined)));
    redis.disconnect();
    await hub.close();
    await dropPrefix(prefix, url);
  }
}
