// `steward backup DEST`: a consistent copy of the SQLite data directory (STEWARD_DATA_DIR), made
// while the service runs (src/store/sqlite/backup.ts). DEST is a data directory: to restore, stop
// Steward and start it with STEWARD_DATA_DIR pointing at (a copy of) DEST. Redis is backed up by Redis.
import { resolve } from "node:path";
import { ConfigError, loadStoreSettings } from "../../config/env.js";
import { BackupError, backupDataDir } from "../../store/sqlite/backup.js";
import { sandboxFallback } from "../operator-store.js";

export const usage = `usage: steward backup DEST
  copies the store in the data directory (STEWARD_DATA_DIR, default ./.steward: steward.db) to DEST,
  consistently while the service runs (SQLite's online backup). DEST must not exist or be empty.
  To restore: stop Steward, and start it with STEWARD_DATA_DIR set to (a copy of) DEST. With
  STEWARD_REDIS_URL set the store is in Redis: back up Redis instead (docs/deploy/backup.md).`;

export async function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (args.length !== 1 || args[0]!.startsWith("-")) {
    process.stderr.write(
      `steward backup: ${args.length === 0 ? "DEST is required" : `unexpected argument "${args[args.length > 1 ? 1 : 0]}"`}\n\n${usage}\n`,
    );
    return 2;
  }
  let settings;
  try {
    settings = sandboxFallback(loadStoreSettings(env), env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`steward: ${error.message}\n`);
    return 1;
  }
  if (settings.postgresUrl) {
    process.stderr.write(
      "steward backup: the store is in PostgreSQL (STEWARD_POSTGRES_URL is set): back up the database itself (pg_dump or your provider's backups)\n",
    );
    return 2;
  }
  if (settings.redisUrl) {
    process.stderr.write(
      "steward backup: the store is in Redis (STEWARD_REDIS_URL is set): back up Redis itself (RDB or AOF, docs/deploy/backup.md)\n",
    );
    return 2;
  }
  const dest = resolve(args[0]!);
  try {
    const r = await backupDataDir(settings.dataDir, dest);
    const mb = (r.bytes / 1024 / 1024).toFixed(1);
    process.stdout.write(
      `backed up ${r.deliveries} deliveries (schema ${r.schemaVersion}, ${mb} MB) from ${settings.dataDir} to ${dest}\n`,
    );
    return 0;
  } catch (error) {
    if (!(error instanceof BackupError)) throw error;
    process.stderr.write(`steward backup: ${error.message}\n`);
    return 1;
  }
}
