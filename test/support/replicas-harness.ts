// Several Steward replicas (child processes) on one shared store behind a small round-robin
// load balancer, driven by the sandbox hub: workflow runs keep arriving, each owing one re-run
// and one check run (writes of one installation, so they share one write slot). The store is a
// backend handed in (where the slot's holder is read, the registry, everything stored as text).
// The harness can kill, on purpose, the replica that holds the installation's write slot (the
// slot names its process), counting the kill only if the store still names the dead process as
// the holder afterwards; and it can disrupt the store once while runs flow (a restart). The
// hub's own records judge everything else: when writes resumed, how far apart they were, how
// many tokens were minted, and whether every run got its effects exactly once. The backends:
// test/redis/replicas-support.ts and test/postgres/replicas-support.ts.
import type { ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import type { ReplicaEntry } from "../../src/coordination/replicas.js";
import {
  awaitRerunEffects,
  setUpRetryableRepo,
  spawnSteward,
  startRetryableRun,
  tallyRerunEffects,
} from "../torture/crash-harness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The replica process: Steward as `steward start` runs it, joining the deployment its environment names. */
export const REPLICA_FIXTURE = resolve(import.meta.dirname, "fixtures/steward-replica.ts");

export interface ReplicaBackend {
  /** What makes a replica join the deployment (its URL and its prefix or schema). */
  env: Record<string, string>;
  /** The holder (`host/pid/uuid#turn`) of the installation's write slot now, if any. */
  slotHolder(installation: string): Promise<string | undefined>;
  registry(): Promise<ReplicaEntry[]>;
  /** Every key and value the deployment stores, as one text (to look for tokens in it). */
  dump(): Promise<string>;
  /** Delivery ids the store recorded. */
  recorded(): Promise<Set<string>>;
  /** Closes what the backend opened to answer the above. */
  close?(): Promise<void>;
}

export interface ReplicaRunOptions {
  backend: ReplicaBackend;
  replicas: number;
  /** Kills of the write slot's holder (each followed by a restart of the victim). */
  holderKills: number;
  /** Done once while runs arrive, after a third of `minRuns` (a restart of the store). */
  disrupt?(): Promise<void>;
  writeIntervalMs: number;
  /** A new run every this often while the kills go on. */
  runEveryMs: number;
  /** At least this many runs in all. */
  minRuns: number;
  /**
   * At most this many runs whose completion the hub has not sent yet: a new run waits for the
   * hub, which sends an installation's deliveries one at a time, so a machine under load does not
   * build a backlog no deadline covers. Work a killed replica leased does not hold runs back.
   * Default: no limit.
   */
  maxUndelivered?: number;
  tokens?: { format?: "classic" | "stateless"; ttlMs?: number };
  onOutput?(label: string, text: string): void;
  log?(line: string): void;
  deadlineMs?: number;
}

export interface HolderKill {
  pid: number;
  /** The store still named the killed replica as the slot's holder after the kill. */
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
  /** Tokens the hub issued that appear in plaintext anywhere in the store. */
  tokensInStore: number;
  /** Token-shaped strings in the store. */
  tokenShapesInStore: number;
  /** Deliveries a replica answered 2xx, and those of them the store did not record. */
  answered2xx: number;
  answeredNotRecorded: string[];
  /** Answers the balancer passed on, by status. */
  statuses: Record<number, number>;
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
  /** It answers HTTP (a balancer sends nothing to a replica still starting). */
  listening: boolean;
}

function startReplica(
  backend: ReplicaBackend,
  hub: HubHandle,
  n: number,
  env: Record<string, string>,
  onOutput: (label: string, text: string) => void,
): Replica {
  const child = spawnSteward(REPLICA_FIXTURE, hub, { ...backend.env, ...env }, `replica #${n}`, onOutput);
  const replica: Replica = {
    n,
    ...child,
    alive: true,
    listening: false,
    url: child.url.then((u) => {
      replica.listening = true;
      return new URL(u).origin;
    }),
  };
  replica.url.catch(() => undefined);
  void child.exited.then(() => (replica.alive = false));
  return replica;
}

/**
 * Round robin over live replicas that listen (a starting one gets nothing, as behind a load
 * balancer's readiness check); a replica that does not answer is skipped (GitHub would see a 502
 * only if none does). Remembers which deliveries were answered 2xx.
 */
async function startBalancer(
  replicas: () => Replica[],
  path: string,
  answered: (guid: string, status: number) => void,
): Promise<{ url: string; server: Server }> {
  let next = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
      const live = replicas().filter((r) => r.alive && r.listening);
      for (let i = 0; i < live.length; i++) {
        const target = live[(next++ + i) % live.length]!;
        try {
          const answer = await fetch(`${await target.url}${path}`, {
            method: req.method ?? "POST",
            headers,
            body,
            signal: AbortSignal.timeout(10_000),
          });
          const text = Buffer.from(await answer.arrayBuffer());
          answered(headers["x-github-delivery"] ?? "", answer.status);
          res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "text/plain" });
          res.end(text);
          return;
        } catch {
          // dead or dying: the next one
        }
      }
      answered(headers["x-github-delivery"] ?? "", 502);
      res.writeHead(502).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, server };
}

export async function runReplicas(opts: ReplicaRunOptions): Promise<ReplicaRunResult> {
  const started = Date.now();
  const { backend } = opts;
  const log = opts.log ?? (() => undefined);
  const onOutput = opts.onOutput ?? (() => undefined);
  const env = { STEWARD_TEST_WRITE_INTERVAL_MS: String(opts.writeIntervalMs) };
  const hub = await createHub({ randomSeed: 19, ...(opts.tokens ? { tokens: opts.tokens } : {}) });
  const replicas: Replica[] = [];
  const ok = new Set<string>();
  const statuses: Record<number, number> = {};
  let balancer: Server | undefined;
  try {
    setUpRetryableRepo(hub);
    const installationId = hub.control.installation("acme")!.id;
    let n = 0;
    for (let i = 0; i < opts.replicas; i++) replicas.push(startReplica(backend, hub, ++n, env, onOutput));
    await Promise.all(replicas.map((r) => r.url));
    const lb = await startBalancer(
      () => replicas,
      "/api/github/webhooks",
      (guid, status) => {
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status >= 200 && status < 300 && guid) ok.add(guid);
      },
    );
    balancer = lb.server;
    hub.control.setWebhookUrl(lb.url);

    // Runs keep arriving while the slot's holders are killed or the store is disrupted.
    const runs: { id: number; sha: string }[] = [];
    let arriving = true;
    // Runs whose completion the hub has sent (it sends an installation's deliveries one at a time).
    const undelivered = () => {
      const sent = new Set<number>();
      for (const d of hub.control.deliveries()) {
        const run = (d.request.payload as { workflow_run?: { id?: number } }).workflow_run;
        if (d.event === "workflow_run" && d.action === "completed" && run?.id !== undefined) sent.add(run.id);
      }
      return runs.filter((r) => !sent.has(r.id)).length;
    };
    const arrivals = (async () => {
      while (arriving || runs.length < opts.minRuns) {
        runs.push(startRetryableRun(hub, runs.length));
        await sleep(opts.runEveryMs);
        while (arriving && opts.maxUndelivered !== undefined && undelivered() >= opts.maxUndelivered) await sleep(100);
      }
    })();

    let registry: ReplicaEntry[] = [];
    if (opts.disrupt) {
      while (runs.length < Math.ceil(opts.minRuns / 3)) await sleep(50);
      const entries = await backend.registry();
      if (entries.length === replicas.filter((r) => r.alive).length) registry = entries;
      log(`disrupting the store after ${runs.length} runs`);
      await opts.disrupt();
      log("store back");
    }

    const writesAfter = (t: number) =>
      hub.control
        .requests()
        .filter((r) => r.auth === "installation" && r.method !== "GET" && r.method !== "HEAD" && r.receivedAt > t);
    // The first kill waits for the installation's first write to reach the hub: the token it was
    // sent with is then sealed in the store (the auth strategy awaits the cache before sending).
    // A holder killed inside that very first mint takes with it a token GitHub issued and no
    // replica can have, and its successor must mint again.
    const firstWriteBy = Date.now() + 60_000;
    while (writesAfter(0).length === 0) {
      if (Date.now() > firstWriteBy) throw new Error("no write of the installation reached the hub in a minute");
      await sleep(20);
    }
    const kills: HolderKill[] = [];
    let attempts = 0;
    while (kills.length < opts.holderKills) {
      if (++attempts > opts.holderKills * 10)
        throw new Error(`could not kill a slot holder in ${attempts - 1} attempts`);
      // Find the holder: the slot names it (`host/pid/uuid#turn`); its pid names the process.
      let victim: Replica | undefined;
      let holder: string | undefined;
      const lookUntil = Date.now() + 60_000;
      const entries = await backend.registry();
      if (entries.length === replicas.filter((r) => r.alive).length) registry = entries;
      while (!victim && Date.now() < lookUntil) {
        holder = await backend.slotHolder(String(installationId));
        const owner = holder?.split("#")[0];
        const pid = owner === undefined ? undefined : Number(owner.split("/")[1]);
        victim = pid === undefined ? undefined : replicas.find((r) => r.alive && r.proc.pid === pid);
        if (!victim) await sleep(5);
      }
      if (!victim) throw new Error("no replica held the write slot for a minute");
      const killedAt = Date.now();
      victim.proc.kill("SIGKILL");
      await victim.exited;
      // A write the victim sent just before its death may reach the hub after the kill: writes
      // count from when it is gone (nobody else could write meanwhile: it held the slot).
      const goneAt = Date.now();
      // The kill landed while it held the slot if the slot still names it (nobody can take it before its hold lapses).
      const confirmed = (await backend.slotHolder(String(installationId)))?.split("#")[0] === holder!.split("#")[0];
      let resumedAfterMs: number | undefined;
      const waitUntil = Date.now() + 60_000;
      while (resumedAfterMs === undefined && Date.now() < waitUntil) {
        const next = writesAfter(goneAt)[0];
        if (next) resumedAfterMs = next.receivedAt - killedAt;
        else await sleep(20);
      }
      if (confirmed) kills.push({ pid: victim.proc.pid!, confirmed, resumedAfterMs });
      log(
        `kill ${kills.length} at ${((killedAt - started) / 1000).toFixed(1)} s: replica #${victim.n} (pid ${victim.proc.pid}) held the slot: ${confirmed}; writes resumed after ${resumedAfterMs} ms`,
      );
      // A rolling restart: the victim comes back (and must not mint another token).
      const replacement = startReplica(backend, hub, ++n, env, onOutput);
      replicas[replicas.indexOf(victim)] = replacement;
      await replacement.url;
      log(`replica #${replacement.n} up ${Date.now() - killedAt} ms after the kill; ${runs.length} runs so far`);
      await sleep(1_500);
    }
    if (registry.length === 0) {
      const entries = await backend.registry();
      if (entries.length === replicas.filter((r) => r.alive).length) registry = entries;
    }
    arriving = false;
    await arrivals;
    const arrived = Date.now();
    // The hub sends one installation's deliveries one at a time: their answer time paces the runs' effects.
    const answers = hub.control
      .deliveries()
      .map((d) => d.duration * 1000)
      .sort((a, b) => a - b);
    const answerMs = (q: number) => Math.round(answers[Math.floor(q * (answers.length - 1))] ?? 0);
    log(
      `${runs.length} runs arrived in ${((arrived - started) / 1000).toFixed(1)} s; ${writesAfter(0).length} writes so far; ` +
        `${answers.length} deliveries answered in ${answerMs(0.5)} ms (median), ${answerMs(0.9)} ms (p90)`,
    );

    await awaitRerunEffects(hub, runs, opts.deadlineMs ?? 120_000, log);
    log(
      `effects awaited for ${((Date.now() - arrived) / 1000).toFixed(1)} s; ${writesAfter(arrived).length} writes meanwhile`,
    );
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
    const dump = await backend.dump();
    const recorded = await backend.recorded();
    const issued = hub.state.tokens.installationTokens();
    return {
      runs: runs.length,
      kills,
      writes: writes.length,
      minWriteGapMs: gaps.length ? Math.min(...gaps) : Infinity,
      lostEffects,
      duplicatedEffects,
      mints: hub.state.tokens.minted.get(installationId) ?? 0,
      tokensInStore: issued.filter((t) => dump.includes(t)).length,
      tokenShapesInStore: (dump.match(/\bgh[opsur]_[A-Za-z0-9_.-]{20,}/g) ?? []).length,
      answered2xx: ok.size,
      answeredNotRecorded: [...ok].filter((id) => !recorded.has(id)),
      statuses,
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
    await hub.close();
    await backend.close?.();
  }
}
