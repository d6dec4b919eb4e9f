// The Redis connection through which replicas share the API client's throttling: the throttling
// plugin's documented clustering (Bottleneck's limiters kept in Redis). Its own clients:
// Bottleneck subscribes to channels, which a client running the store's commands must not do.
//
// One connection per Redis URL for the life of the process, never closed: the plugin creates its
// limiter groups once per process, bound to the connection of the first client that asks, and a
// closed connection would leave every later request of the process waiting on dead limiters.
import Bottleneck from "bottleneck";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import type { SharedThrottling } from "../../api/types.js";
import { describeRedisUrl } from "../../store/redis/connect.js";

const connections = new Map<string, Promise<Bottleneck.IORedisConnection>>();

async function connect(url: string, logger: Logger | undefined): Promise<Bottleneck.IORedisConnection> {
  const where = describeRedisUrl(url);
  // Not lazy: Bottleneck waits for its subscriber (a duplicate of this client) to be ready before subscribing.
  const client = new Redis(url, { maxRetriesPerRequest: 3, connectTimeout: 5_000, connectionName: "steward-throttle" });
  let lastLogged = 0;
  const logError = (e: Error) => {
    // ioredis and Bottleneck retry on their own; one line every few seconds is enough to see it.
    if (Date.now() - lastLogged < 5_000) return;
    lastLogged = Date.now();
    logger?.warn({ redis: where, err: { message: e.message } }, "shared throttling: redis error");
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
  return connection;
}

/** Throttling shared by the replicas on `url`; `namespace` (one per deployment) prefixes the throttling ids. */
export async function sharedThrottling(url: string, opts: { logger?: Logger; namespace?: string } = {}): Promise<SharedThrottling> {
  let connecting = connections.get(url);
  if (!connecting) {
    connecting = connect(url, opts.logger);
    connections.set(url, connecting);
    // A failed connection is not kept: the next start-up tries again.
    connecting.catch(() => connections.delete(url));
  }
  return { connection: await connecting, namespace: opts.namespace ?? "steward" };
}
