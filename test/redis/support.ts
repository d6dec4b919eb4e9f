// Redis test scaffolding: whether a Redis answers at 127.0.0.1:6379 (tests skip with a
// printed reason when not), a unique key prefix per test, and removal of its keys after.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { openRedisStore, type RedisStore } from "../../src/store/redis/store.js";

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

export function uniquePrefix(): string {
  return `steward-test:${randomUUID()}:`;
}

/** Delete every key under `prefix` (SCAN, not KEYS: the server may be shared). */
export async function dropPrefix(prefix: string): Promise<void> {
  const client = new Redis(redisUrl, { lazyConnect: true });
  await client.connect();
  try {
    let cursor = "0";
    do {
      const [next, keys] = await client.scan(
        cursor,
        "MATCH",
        `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`,
        "COUNT",
        1000,
      );
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== "0");
  } finally {
    client.disconnect();
  }
}

/** Stores opened by a test (several = several replicas), all under one fresh prefix, closed and cleaned by `dispose`. */
export function redisStores() {
  const prefix = uniquePrefix();
  const opened: RedisStore[] = [];
  return {
    prefix,
    async open(opts: { auditCap?: number } = {}): Promise<RedisStore> {
      const store = await openRedisStore(redisUrl, { prefix, ...opts });
      opened.push(store);
      return store;
    },
    async dispose(): Promise<void> {
      await Promise.all(opened.map((s) => s.close()));
      await dropPrefix(prefix);
    },
  };
}
