// The store operator commands use: the service's own (Redis when STEWARD_REDIS_URL is set,
// else the SQLite file in STEWARD_DATA_DIR), so they see and change what the service does.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import type { StewardConfig } from "../config/types.js";
import { openSqliteStore, storeFileName, type SqliteStore } from "../store/sqlite/store.js";
import { openRedisStore, type RedisStore } from "../store/redis/store.js";

export type OperatorStore = SqliteStore | RedisStore;

/** Where the store is, for messages (never a credential). */
export function storeLocation(settings: Pick<StewardConfig, "dataDir" | "redisUrl">, store?: OperatorStore): string {
  if (store && "where" in store) return store.where;
  return settings.redisUrl ? "Redis" : settings.dataDir;
}

/**
 * Opens it; with `mustExist`, a SQLite store that was never created is not created (undefined):
 * looking must not leave a store behind.
 */
export async function openOperatorStore(
  settings: Pick<StewardConfig, "dataDir" | "redisUrl">,
  opts: { mustExist?: boolean; logger?: Logger } = {},
): Promise<OperatorStore | undefined> {
  if (settings.redisUrl) return openRedisStore(settings.redisUrl, opts.logger ? { logger: opts.logger } : {});
  if (opts.mustExist && !existsSync(join(settings.dataDir, storeFileName))) return undefined;
  return openSqliteStore(settings.dataDir, opts.logger ? { logger: opts.logger } : {});
}

