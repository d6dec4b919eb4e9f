// The store operator commands use: the service's own (PostgreSQL when STEWARD_POSTGRES_URL is
// set, else Redis when STEWARD_REDIS_URL is, else the SQLite file in STEWARD_DATA_DIR), so they
// see and change what the service does.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import type { StoreSettings } from "../config/types.js";
import { openSqliteStore, storeFileName, type SqliteStore } from "../store/sqlite/store.js";
// Redis's and PostgreSQL's stores are loaded only when opened: `steward start` imports this module,
// and a service on SQLite holds neither ioredis nor pg (as createSteward loads them, src/app.ts).
import type { RedisStore } from "../store/redis/store.js";
import type { PostgresStore } from "../store/postgres/store.js";

export type OperatorStore = SqliteStore | RedisStore | PostgresStore;

/** Where the store is, for messages (never a credential). */
export function storeLocation(settings: StoreSettings, store?: OperatorStore): string {
  if (store && "where" in store) return store.where;
  return settings.postgresUrl ? "PostgreSQL" : settings.redisUrl ? "Redis" : settings.dataDir;
}

/**
 * Opens it; with `mustExist`, a SQLite store that was never created is not created (undefined):
 * looking must not leave a store behind.
 */
export async function openOperatorStore(
  settings: StoreSettings,
  opts: { mustExist?: boolean; logger?: Logger } = {},
): Promise<OperatorStore | undefined> {
  const logger = opts.logger ? { logger: opts.logger } : {};
  if (settings.postgresUrl) {
    const { openPostgresStore } = await import("../store/postgres/store.js");
    return openPostgresStore(settings.postgresUrl, { ...logger, maxConnections: 2 });
  }
  if (settings.redisUrl) {
    const { openRedisStore } = await import("../store/redis/store.js");
    return openRedisStore(settings.redisUrl, logger);
  }
  if (opts.mustExist && !existsSync(join(settings.dataDir, storeFileName))) return undefined;
  return openSqliteStore(settings.dataDir, logger);
}

/** Where `steward start` keeps the sandbox's store when STEWARD_DATA_DIR is not set. */
export const SANDBOX_DATA_DIR = "./.steward/sandbox";

/**
 * With no APP_ID and no STEWARD_DATA_DIR (the sandbox's setting), operator commands read the
 * sandbox's store when the default directory holds none: what the sandbox's console shows.
 */
export function sandboxFallback(settings: StoreSettings, env: NodeJS.ProcessEnv): StoreSettings {
  if (env.APP_ID?.trim() || env.STEWARD_DATA_DIR?.trim() || settings.redisUrl || settings.postgresUrl) return settings;
  const sandbox = resolve(SANDBOX_DATA_DIR);
  if (existsSync(join(settings.dataDir, storeFileName)) || !existsSync(join(sandbox, storeFileName))) return settings;
  return { ...settings, dataDir: sandbox };
}
