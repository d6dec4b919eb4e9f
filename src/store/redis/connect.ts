// Opening the ioredis client for the Redis store: options that make a lost Redis fail
// fast (the intake answers 503) instead of queueing forever, a description of the server
// without credentials, and the one check that tells an operator deliveries are not on disk.
//
// The URL may name a standalone Redis (or a Sentinel-managed primary) or any node of a Redis
// Cluster: the node is asked (INFO cluster) and, when it runs in cluster mode, the client
// becomes ioredis's Cluster client seeded with that node, which finds the others itself. Every
// key of a deployment shares one hash tag (keys.ts), so each operation lands on one node.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import type { Logger } from "pino";

/** A standalone Redis or a Redis Cluster: the store and coordination use only what both answer. */
export type RedisClient = Redis | Cluster;

/** `redis://host:port/db` without user or password: the only form of the URL that may be logged. */
export function describeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname && u.pathname !== "/" ? u.pathname : "/0"}`;
  } catch {
    return "redis (unparseable URL)";
  }
}

export function redisClientOptions(): RedisOptions {
  return {
    lazyConnect: true,
    // Commands issued while disconnected fail after a few reconnect attempts, so a record()
    // rejects (503, GitHub's delivery stays redeliverable) rather than hanging the request.
    maxRetriesPerRequest: 3,
    connectTimeout: 5_000,
    // Each command is written as it is issued: ioredis's auto-pipelining builds a pipeline object
    // per turn of the event loop, which cost more CPU than the writes it saved (decision 0023).
    // Redis still reads what arrives together in one go.
    enableAutoPipelining: false,
  };
}

/** Whether the server runs in cluster mode (`cluster_enabled:1` in INFO cluster). */
export async function clusterEnabled(client: Redis): Promise<boolean> {
  const info = await client.info("cluster");
  return /^cluster_enabled:1\s*$/m.test(info);
}

/** The Cluster client's options from the URL: the node it names is the seed, credentials and TLS go to every node. */
export function clusterClientOptions(
  url: string,
  name: string,
): { seed: { host: string; port: number }; options: ClusterOptions } {
  const u = new URL(url);
  const node: RedisOptions = {
    connectTimeout: 5_000,
    maxRetriesPerRequest: 3,
    connectionName: name,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === "rediss:" ? { tls: {} } : {}),
  };
  return {
    seed: { host: u.hostname.replace(/^\[(.*)\]$/, "$1"), port: u.port ? Number(u.port) : 6379 },
    options: {
      lazyConnect: true,
      redisOptions: node,
      enableAutoPipelining: false,
      // Writes go to the primaries; a moved slot (resharding, failover) is followed a few times.
      scaleReads: "master",
      maxRedirections: 16,
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      // Behind TLS, nodes are reached by the names they announce, so certificates match them.
      ...(u.protocol === "rediss:" ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    },
  };
}

/** The database a URL names (its path), 0 when none. */
function databaseOf(url: string): number {
  try {
    const path = new URL(url).pathname.replace(/^\//, "");
    return path === "" ? 0 : Number(path);
  } catch {
    return 0;
  }
}

/**
 * Connect and PING; a node of a Redis Cluster gives a Cluster client instead. On failure the
 * client is closed and the error names the server, never its credentials.
 */
export async function connectRedis(url: string, logger: Logger | undefined, name: string): Promise<RedisClient> {
  const where = describeRedisUrl(url);
  let lastLogged = 0;
  const onError = (e: Error) => {
    // ioredis retries on its own; one line every few seconds is enough to see it.
    if (Date.now() - lastLogged < 5_000) return;
    lastLogged = Date.now();
    logger?.warn({ redis: where, err: { message: e.message } }, "redis connection error");
  };
  const client = new Redis(url, { ...redisClientOptions(), connectionName: name });
  client.on("error", onError);
  let cluster: boolean;
  try {
    await client.connect();
    await client.ping();
    cluster = await clusterEnabled(client);
  } catch (e) {
    client.disconnect();
    throw new Error(`cannot connect to Redis at ${where}: ${(e as Error).message}`);
  }
  if (!cluster) return client;
  client.disconnect();
  if (databaseOf(url) !== 0) {
    throw new Error(
      `Redis at ${where} is a Redis Cluster node: a cluster has only database 0 (use ${where.replace(/\/\d+$/, "/0")})`,
    );
  }
  const { seed, options } = clusterClientOptions(url, name);
  const nodes = new Cluster([seed], options);
  nodes.on("error", onError);
  try {
    await nodes.connect();
    await nodes.ping();
  } catch (e) {
    nodes.disconnect();
    throw new Error(`cannot connect to the Redis Cluster at ${where}: ${(e as Error).message}`);
  }
  logger?.info({ redis: where, nodes: nodes.nodes("master").length }, "redis cluster connected");
  return nodes;
}

export type Persistence = { appendonly: boolean; appendfsync: string | undefined } | undefined;

async function persistenceOfNode(client: Redis): Promise<Persistence> {
  try {
    const aof = (await client.config("GET", "appendonly")) as string[];
    const fsync = (await client.config("GET", "appendfsync")) as string[];
    return { appendonly: aof[1] === "yes", appendfsync: fsync[1] };
  } catch {
    return undefined;
  }
}

/**
 * What Redis keeps on disk (undefined when CONFIG is disabled, as on some managed services).
 * On a cluster, the weakest of its primaries: the deployment's slot may be on any of them.
 */
export async function persistenceOf(client: RedisClient): Promise<Persistence> {
  if (client instanceof Redis) return persistenceOfNode(client);
  const found = await Promise.all(client.nodes("master").map(persistenceOfNode));
  if (found.length === 0 || found.some((p) => p === undefined)) return undefined;
  const weakest = found.find((p) => !p!.appendonly) ?? found.find((p) => p!.appendfsync === "no") ?? found[0];
  return weakest;
}

/** The durability promise of the intake holds only with an append-only file; say so once at start. */
export function warnAboutPersistence(persistence: Persistence, where: string, logger: Logger | undefined): void {
  if (!logger) return;
  if (persistence === undefined) {
    logger.info(
      { redis: where },
      "redis persistence unknown (CONFIG unavailable): it must use appendonly yes for recorded deliveries to survive a Redis restart",
    );
  } else if (!persistence.appendonly) {
    logger.warn(
      { redis: where },
      "redis keeps no append-only file: recorded deliveries, tasks and state are lost if Redis restarts (set appendonly yes, appendfsync everysec or always)",
    );
  } else if (persistence.appendfsync === "no") {
    logger.warn(
      { redis: where },
      "redis appendfsync is 'no': a power loss may drop recently recorded deliveries (use everysec or always)",
    );
  }
}
