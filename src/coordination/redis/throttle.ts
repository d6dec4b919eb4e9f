// The Redis connection Bottleneck uses to share API throttling state between replicas
// (handed to createOctokitFactory as `sharedThrottle`). Its own clients: Bottleneck
// subscribes to channels, which a client running the store's commands must not do.
import Bottleneck from "bottleneck";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import { describeRedisUrl } from "../../store/redis/connect.js";

export interface SharedThrottle {
  connection: Bottleneck.IORedisConnection;
  namespace: string;
  close(): Promise<void>;
}

export async function openSharedThrottle(url: string, opts: { logger?: Logger; namespace?: string } = {}): Promise<SharedThrottle> {
  const where = describeRedisUrl(url);
  // Not lazy: Bottleneck waits for its subscriber (a duplicate of this client) to be ready before subscribing.
  const client = new Redis(url, { maxRetriesPerRequest: 3, connectTimeout: 5_000, connectionName: "steward-throttle" });
  let lastLogged = 0;
  const logError = (e: Error) => {
    // ioredis and Bottleneck retry on their own; one line every few seconds is enough to see it.
    if (Date.now() - lastLogged < 5_000) return;
    lastLogged = Date.now();
    opts.logger?.warn({ redis: where, err: { message: e.message } }, "shared throttling: redis error");
  };
  client.on("error", logError);
  try {
    await client.ping();
  } catch (e) {
    client.disconnect();
    throw new Error(`cannot connect to Redis at ${where} for shared throttling: ${(e as Error).message}`);
  }
  const connection = new Bottleneck.IORedisConnection({ client, Redis } as Bottleneck.IORedisConnectionOptions);
  connection.on("error", logError);
  // Declared as a method in Bottleneck's typings; at run time it is a promise.
  await (connection as unknown as { ready: Promise<unknown> }).ready;
  return {
    connection,
    namespace: opts.namespace ?? "steward",
    async close() {
      await connection.disconnect(true);
    },
  };
}
