// Opening the ioredis client for the Redis store: options that make a lost Redis fail
// fast (the intake answers 503) instead of queueing forever, a description of the server
// without credentials, and the one check that tells an operator deliveries are not on disk.
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";

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
    // Many deliveries recorded in the same tick go to Redis as one pipeline (group commit).
    enableAutoPipelining: true,
  };
}

/** Connect and PING; on failure the client is closed and the error names the server, never its credentials. */
export async function connectRedis(url: string, logger: Logger | undefined, name: string): Promise<Redis> {
  const where = describeRedisUrl(url);
  const client = new Redis(url, { ...redisClientOptions(), connectionName: name });
  let lastLogged = 0;
  client.on("error", (e: Error) => {
    // ioredis retries on its own; one line every few seconds is enough to see it.
    if (Date.now() - lastLogged < 5_000) return;
    lastLogged = Date.now();
    logger?.warn({ redis: where, err: { message: e.message } }, "redis connection error");
  });
  try {
    await client.connect();
    await client.ping();
  } catch (e) {
    client.disconnect();
    throw new Error(`cannot connect to Redis at ${where}: ${(e as Error).message}`);
  }
  return client;
}

export type Persistence = { appendonly: boolean; appendfsync: string | undefined } | undefined;

/** What Redis keeps on disk (undefined when CONFIG is disabled, as on some managed services). */
export async function persistenceOf(client: Redis): Promise<Persistence> {
  try {
    const aof = (await client.config("GET", "appendonly")) as string[];
    const fsync = (await client.config("GET", "appendfsync")) as string[];
    return { appendonly: aof[1] === "yes", appendfsync: fsync[1] };
  } catch {
    return undefined;
  }
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
