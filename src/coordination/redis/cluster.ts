// What replicas on one Redis share beyond the store: the API client's coordination (the write
// slot of each installation, installation tokens sealed and minted once per installation for the
// whole deployment), and the registry of live replicas and what each holds (/metrics).
import { createSharedTokenCache } from "./token-cache.js";
import { connectRedis } from "../../store/redis/connect.js";
import { checkRedisPrefix, defaultRedisPrefix } from "../../store/redis/keys.js";
import type { ReplicaCoordination, ReplicaCoordinationOptions, ReplicaRegistry } from "../replicas.js";
import { startReplicaRegistry } from "./replicas.js";
import { RedisWriteSlots } from "./write-slots.js";

export interface RedisCoordinationOptions extends ReplicaCoordinationOptions {
  /** Key prefix of the deployment (the store's; default `{steward}:`). */
  prefix?: string;
}

export async function openRedisCoordination(opts: RedisCoordinationOptions): Promise<ReplicaCoordination> {
  const prefix = checkRedisPrefix(opts.prefix ?? defaultRedisPrefix);
  const client = await connectRedis(opts.url, opts.logger, "steward-cluster");
  const tokens = createSharedTokenCache({
    client,
    prefix,
    privateKey: opts.config.privateKey,
    appId: opts.config.appId,
    logger: opts.logger,
    ...(opts.onMint ? { onMint: opts.onMint } : {}),
  });
  const writeSlots = new RedisWriteSlots(client, prefix);
  let registry: ReplicaRegistry | undefined;
  return {
    coordination: { writeSlots, tokens },
    register() {
      registry ??= startReplicaRegistry({
        client,
        prefix,
        logger: opts.logger,
        holds: () => ({ writeSlots: writeSlots.held(), tokenMints: tokens.minting() }),
      });
    },
    replicas: () => registry?.alive() ?? Promise.resolve([]),
    async close() {
      await tokens.close();
      await registry?.stop().catch(() => undefined);
      await client.quit().catch(() => client.disconnect());
    },
  };
}
