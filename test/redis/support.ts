// Redis test scaffolding: whether a Redis answers at 127.0.0.1:6379 (tests skip with a
// printed reason when not), a unique key prefix per test, and removal of its keys after. The
// same helpers serve a Redis Cluster (cluster-support.ts) given its URL.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { openRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { connectRedis, type RedisClient } from "../../src/store/redis/connect.js";

export const redisUrl = process.env.STEWARD_TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";

async function probe(): Promise<string | undefined> {
  const client = new Redis(redisUrl, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
  });
  let cause: string | undefined;
  client.on("error", (e: Error) => (cause ??= e.message));
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (e) {
    return cause ?? (e as Error).message;
  } finally {
    client.disconnect();
  }
}

const unreachable = await probe();
export const redisUp = unreachable === undefined;
if (!redisUp) console.warn(`Redis tests skipped: no Redis at ${redisUrl} (${unreachable})`);

/** A deployment's prefix of its own, with a hash tag as every Steward prefix has (keys.ts). */
export function uniquePrefix(): string {
  return `{steward-test:${randomUUID()}}:`;
}

/** A SCAN pattern matching every key under `prefix`. */
export function prefixPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`;
}

/** Every key matching `pattern`: SCAN on a standalone server, SCAN on each primary of a cluster (each scans only its own keys). */
export async function scanKeys(client: RedisClient, pattern: string): Promise<string[]> {
  const nodes = client instanceof Redis ? [client] : client.nodes("master");
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== "0");
  }
  return found;
}

/** Delete every key under `prefix` (SCAN, not KEYS: the server may be shared). */
export async function dropPrefix(prefix: string, url = redisUrl): Promise<void> {
  const client = await connectRedis(url, undefined, "steward-test");
  try {
    const keys = await scanKeys(client, prefixPattern(prefix));
    // One hash tag: every key is in one slot, so one DEL per batch is allowed on a cluster too.
    for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
  } finally {
    client.disconnect();
  }
}

/** Stores opened by a test (several = several replicas), all under one fresh prefix, closed and cleaned by `dispose`. */
export function redisStores(url = redisUrl) {
  const prefix = uniquePrefix();
  const opened: RedisStore[] = [];
  return {
    prefix,
    async open(opts: { auditCap?: number } = {}): Promise<RedisStore> {
      const store = await openRedisStore(url, { prefix, ...opts });
      opened.push(store);
      return store;
    },
    async dispose(): Promise<void> {
      await Promise.all(opened.map((s) => s.close()));
      await dropPrefix(prefix, url);
    },
  };
}
