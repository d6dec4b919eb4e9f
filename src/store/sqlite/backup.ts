// A consistent copy of the SQLite data directory while the service runs (`steward backup`).
// The store is one SQLite file (steward.db, WAL): SQLite's online backup API copies it as of one
// read transaction, all pages in one step (in WAL mode a reader never blocks the writers, and a
// single step is never restarted by their commits).
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  rmdirSync,
  statSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import Database from "better-sqlite3";
import { storeFileName } from "./store.js";
import { schemaProblem } from "./schema.js";

export class BackupError extends Error {}

export interface BackupResult {
  /** Delivery rows in the copy. */
  deliveries: number;
  /** The copy's schema version (PRAGMA user_version): a version-1 store is copied as it is, and migrated when a service opens it. */
  schemaVersion: number;
  /** Bytes of the copy on disk. */
  bytes: number;
}

/**
 * Copies the data directory `dataDir` to `dest` (which must not exist, or be an empty directory),
 * consistently while a service uses it. The copy is made beside `dest` and renamed into place, so
 * `dest` is either a whole backup or absent.
 */
export async function backupDataDir(dataDir: string, dest: string): Promise<BackupResult> {
  const source = join(dataDir, storeFileName);
  if (!existsSync(source)) throw new BackupError(`no store in ${dataDir} (${storeFileName} is missing)`);
  if (existsSync(dest) && (!statSync(dest).isDirectory() || readdirSync(dest).length > 0)) {
    throw new BackupError(`${dest} already exists and is not an empty directory`);
  }
  const db = new Database(source, { fileMustExist: true });
  const work = join(dirname(dest), `.${basename(dest)}.partial-${process.pid}`);
  try {
    db.pragma("busy_timeout = 5000");
    // A store of another version may keep data beside the file: only the version that wrote it copies it whole.
    const problem = schemaProblem(db, dataDir);
    if (problem) throw new BackupError(problem);
    const schemaVersion = db.pragma("user_version", { simple: true }) as number;
    if (schemaVersion === 0) throw new BackupError(`no store in ${dataDir} (${storeFileName} is empty)`);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    const copy = join(work, storeFileName);
    await db.backup(copy, { progress: () => 0x7fffffff });
    const deliveries = countDeliveries(copy);
    syncPath(copy);
    syncPath(work);
    if (existsSync(dest)) rmdirSync(dest);
    renameSync(work, dest);
    syncPath(dirname(dest));
    return { deliveries, schemaVersion, bytes: statSync(join(dest, storeFileName)).size };
  } finally {
    db.close();
    rmSync(work, { recursive: true, force: true });
  }
}

function countDeliveries(path: string): number {
  const copy = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return copy.prepare("SELECT count(*) FROM deliveries").pluck().get() as number;
  } finally {
    copy.close();
  }
}

function syncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
