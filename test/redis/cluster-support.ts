// A real 3-node Redis Cluster for tests, from the machine's own redis-server (or, asked for,
// valkey-server): three primaries on free loopback ports (each in a temporary directory, nothing
// persisted), joined with `redis-cli --cluster create` (`valkey-cli`), handed out once every node
// reports `cluster_state:ok` and knows all three. Torn down by `stop()`. Tests skip (with a
// printed reason) where the server or its cli is missing.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

export type ServerKind = "redis" | "valkey";

function missingTool(kind: ServerKind = "redis"): string | undefined {
  for (const tool of [`${kind}-server`, `${kind}-cli`]) {
    const found = spawnSync(tool, ["--version"], { encoding: "utf8" });
    if (found.error || found.status !== 0) return `${tool} not found (${found.error?.message ?? found.stderr})`;
  }
  return undefined;
}

const missing = missingTool();
export const clusterAvailable = missing === undefined;
if (!clusterAvailable) console.warn(`Redis Cluster tests skipped: ${missing}`);
const valkeyMissing = missingTool("valkey");
export const valkeyAvailable = valkeyMissing === undefined;
if (!valkeyAvailable) console.warn(`Valkey tests skipped: ${valkeyMissing}`);

export interface TestCluster {
  /** `redis://127.0.0.1:<port>/0` of the first node: what an operator would set STEWARD_REDIS_URL to. */
  url: string;
  ports: number[];
  stop(): Promise<void>;
}

function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A port free for the node and for its cluster bus (the port + 10000), not handed out before in this process. */
const taken = new Set<number>();
export async function freeNodePort(): Promise<number> {
  for (let tries = 0; tries < 500; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await listenable(port)) && (await listenable(port + 10_000))) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
  throw new Error("no free port pair for a Redis Cluster node");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error(
    `Redis Cluster: ${what} not reached in ${timeoutMs} ms${last ? ` (${(last as Error).message})` : ""}`,
  );
}

export async function ask<T>(port: number, fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("close", (code) => resolve({ code, output }));
  });
}

export interface TestNode {
  port: number;
  dir: string;
  proc: ChildProcess;
  exited: Promise<void>;
}

/** One server of `kind` on a free loopback port, in a temporary directory of its own, nothing persisted; `args(dir)` added. */
export async function spawnNode(kind: ServerKind, args: (dir: string) => string[] = () => []): Promise<TestNode> {
  const port = await freeNodePort();
  const dir = await mkdtemp(join(tmpdir(), `steward-${kind}-`));
  const proc = spawn(
    `${kind}-server`,
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      ...args(dir),
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "no",
      "--daemonize",
      "no",
      "--logfile",
      join(dir, `${kind}.log`),
    ],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  return { port, dir, proc, exited };
}

/** SIGTERM, SIGKILL for any still running after 10 s, then their directories removed. */
export async function stopNodes(nodes: TestNode[]): Promise<void> {
  for (const n of nodes) n.proc.kill("SIGTERM");
  await Promise.race([Promise.all(nodes.map((n) => n.exited)), sleep(10_000)]);
  for (const n of nodes) if (n.proc.exitCode === null && n.proc.signalCode === null) n.proc.kill("SIGKILL");
  await Promise.all(nodes.map((n) => n.exited));
  await Promise.all(nodes.map((n) => rm(n.dir, { recursive: true, force: true })));
}

/** Start three primaries, join them, wait for the cluster to be whole on every node. */
export async function startRedisCluster(kind: ServerKind = "redis"): Promise<TestCluster> {
  const nodes: TestNode[] = [];
  const stop = () => stopNodes(nodes);
  try {
    for (let i = 0; i < 3; i++)
      nodes.push(
        await spawnNode(kind, (dir) => [
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, "nodes.conf"),
          "--cluster-node-timeout",
          "5000",
        ]),
      );
    const ports = nodes.map((n) => n.port);
    for (const port of ports)
      await waitUntil(`node ${port} answering`, () => ask(port, async (c) => (await c.ping()) === "PONG"), 30_000);
    const created = await run(`${kind}-cli`, [
      "--cluster",
      "create",
      ...ports.map((p) => `127.0.0.1:${p}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    if (created.code !== 0) throw new Error(`${kind}-cli --cluster create failed (${created.code}): ${created.output}`);
    // Every node must agree before a client is handed the cluster: slots all assigned, three known nodes.
    for (const port of ports) {
      await waitUntil(
        `cluster_state:ok on ${port}`,
        () =>
          ask(port, async (c) => {
            const info = await c.cluster("INFO");
            return (
              /^cluster_state:ok\s*$/m.test(info) &&
              /^cluster_slots_ok:16384\s*$/m.test(info) &&
              /^cluster_known_nodes:3\s*$/m.test(info)
            );
          }),
        60_000,
      );
    }
    return { url: `redis://127.0.0.1:${ports[0]}/0`, ports, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
