// What replicas on one Redis share beyond the store: the API client's coordination (the write
// slot of each installation, installation tokens sealed and minted once per installation for the
// whole deployment), and the registry of live replicas and what each holds (/metrics).
import type { Logger } from "pino";
import type { StewardConfig } from "../../config/types.js";
import type { ClientCoordination } from "../../api/types.js";
import { createSharedTokenCache, type SharedTokenCache } from "./token-cache.js";
import { connectRedis } from "../../store/redis/connect.js";
import { checkRedisPrefix, defaultRedisPrefix } from "../../store/redis/keys.js";
import { startReplicaRegistry, type ReplicaEntry, type ReplicaRegistry } from "./replicas.js";
import { RedisWriteSlots } from "./write-slots.js";

export interface ClusterOptions {
  url: string;
  config: StewardConfig;
  logger: Logger;
  /** Key prefix of the deployment (the store's; default `{steward}:`). */
  prefix?: string;
  /** This replica minted a token for the installation. */
  onMint?(installationId: string): void;
}

export interface Cluster {
  /** What the API client coordinates through (createOctokitFactory's `coordination`). */
  coordination: ClientCoordination & { writeSlots: RedisWriteSlots; tokens: SharedTokenCache };
  /** Start reporting this replica as alive, with the slots and mints it holds. */
  register(): void;
  /** Live replicas and what each holds. */
  replicas(): Promise<ReplicaEntry[]>;
  close(): Promise<void>;
}

export async function openCluster(opts: ClusterOptions): Promise<Cluster> {
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
