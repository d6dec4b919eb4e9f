// Installation tokens shared by every replica through Redis (the sharing itself:
// ../shared-token-cache.ts). Sealed tokens are keys with the token's expiry; a mint lease is an
// owned lease (owned-lease.ts); a replica waiting for another's mint looks for the token again
// every POLL_MS.
import type { RedisClient } from "../../store/redis/connect.js";
import { OwnedLeases } from "./owned-lease.js";
import {
  createSealedTokenCache,
  type SealedTokenCacheOptions,
  type SealedTokenStore,
  type SharedTokenCache,
} from "../shared-token-cache.js";

export { MINT_LEASE_MS, type SharedTokenCache } from "../shared-token-cache.js";

/** How often a replica waiting for another's mint looks for the token. */
const POLL_MS = 100;

export interface SharedTokenCacheOptions extends SealedTokenCacheOptions {
  client: RedisClient;
  /** Key prefix of the deployment (the Redis store's). */
  prefix: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Sealed tokens and mint leases of the deployment under `prefix`, on `client`. */
export function redisSealedTokens(client: RedisClient, prefix: string): SealedTokenStore {
  const leases = new OwnedLeases(client);
  return {
    name: "redis",
    names: (id) => ({ token: `${prefix}token:${id}`, lease: `${prefix}token-mint:${id}` }),
    read: async (token) => (await client.get(token)) ?? undefined,
    async write(token, sealed, ttlMs) {
      await client.set(token, sealed, "PX", ttlMs);
    },
    acquire: (lease, owner, ttlMs) => leases.acquire(lease, owner, ttlMs),
    renew: (lease, owner, ttlMs) => leases.renew(lease, owner, ttlMs),
    release: (lease, owner) => leases.release(lease, owner),
    awaitToken: () => sleep(POLL_MS),
  };
}

export function createSharedTokenCache(opts: SharedTokenCacheOptions): SharedTokenCache {
  const { client, prefix, ...rest } = opts;
  return createSealedTokenCache(redisSealedTokens(client, prefix), rest);
}
