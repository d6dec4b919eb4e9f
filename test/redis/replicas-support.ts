// The replica harness's view of a Redis deployment (test/support/replicas-harness.ts): a key
// prefix of its own, where the write slot's holder is read, the registry, and every value
// under the prefix as text (to look for tokens in it). One connection, kept open: the slot's
// holder is looked up again and again while a write lasts milliseconds.
import type { ReplicaEntry } from "../../src/coordination/replicas.js";
import { replicaKeys } from "../../src/coordination/redis/replicas.js";
import { slotKey } from "../../src/coordination/redis/write-slots.js";
import { RedisKeys } from "../../src/store/redis/keys.js";
import { connectRedis, type RedisClient } from "../../src/store/redis/connect.js";
import type { ReplicaBackend } from "../support/replicas-harness.js";
import { dropPrefix, prefixPattern, redisUrl, scanKeys, uniquePrefix } from "./support.js";

/** Every value under the deployment's keys, as one text. */
async function dumpKeys(redis: RedisClient, pattern: string): Promise<string> {
  const parts: string[] = [];
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
  return parts.join("\n");
}

/** A deployment under a fresh prefix on the Redis at `url` (a Redis Cluster's node for the cluster test). */
export function redisBackend(url = redisUrl): ReplicaBackend {
  const prefix = uniquePrefix();
  let client: Promise<RedisClient> | undefined;
  const redis = () => {
    const open = (client ??= connectRedis(url, undefined, "steward-test"));
    // A connection that failed is tried again on the next call.
    open.catch(() => client === open && (client = undefined));
    return open;
  };
  // Connected before the replicas start and load the machine.
  void redis().catch(() => undefined);
  const replicas = replicaKeys(prefix);
  return {
    env: { STEWARD_REDIS_URL: url, STEWARD_TEST_REDIS_PREFIX: prefix },
    slotHolder: async (installation) =>
      (await (await redis()).hget(slotKey(prefix, installation), "holder")) ?? undefined,
    async registry() {
      const r = await redis();
      const ids = await r.zrange(replicas.index, 0, -1);
      if (ids.length === 0) return [];
      return (await r.mget(ids.map(replicas.entry)))
        .filter((t): t is string => t !== null)
        .map((t) => JSON.parse(t) as ReplicaEntry);
    },
    dump: async () => dumpKeys(await redis(), prefixPattern(prefix)),
    recorded: async () => new Set(await (await redis()).zrange(new RedisKeys(prefix).all, 0, -1)),
    async close() {
      const open = client;
      client = undefined;
      (await open?.catch(() => undefined))?.disconnect();
      await dropPrefix(prefix, url);
    },
  };
}
