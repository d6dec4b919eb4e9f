// A consistent copy of the SQLite data directory while the service runs (`steward backup`).
//
// The directory is one SQLite file (steward.db, WAL) whose rows point into the payload log's files
// (payloads/). SQLite's online backup API copies the database as of one read transaction (one
// step for all pages: in WAL mode a reader never blocks the writers, and a single step is never
// restarted by their commits). The payload files are copied after it: they are only appended to,
// so every payload a copied row points at is already in them, unless a collection after a purge
// moved it forward and removed its file in between. That is checked, not assumed: each copied
// row's payload must lie inside the copied file, else the whole copy is made again.
// Frames appended after the snapshot (deliveries answered but not yet in the tables) are moved in
// when the copy is opened, exactly as after a crash.
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, rmdirSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import Database from "better-sqlite3";
import { payloadDirName, spoolFileName, storeFileName } from "./store.js";

export class BackupError extends Error {}

export interface BackupResult {
  /** Delivery rows in the copy. */
  deliveries: number;
  /** The copy's schema version (PRAGMA user_version). */
  schemaVersion: number;
  payloadFiles: number;
  /** Bytes of the copy on disk. */
  bytes: number;
  /** Copies made (more than one when a collection ran during one). */
  attempts: number;
}

const MAX_ATTEMPTS = 5;

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
  mkdirSync(dirname(dest), { recursive: true });
  const work = join(dirname(dest), `.${basename(dest)}.partial-${process.pid}`);
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      rmSync(work, { recursive: true, force: true });
      mkdirSync(join(work, payloadDirName), { recursive: true });
      // All remaining pages in one step: one read transaction, never restarted by a writer.
      await db.backup(join(work, storeFileName), { progress: () => 0x7fffffff });
      const copied = copyPayloads(dataDir, work);
      const check = checkCopy(work);
      if (check.missing.length > 0) continue;
      for (const file of copied) syncFile(file);
      syncFile(join(work, storeFileName));
      syncFile(join(work, payloadDirName));
      syncFile(work);
      const bytes = [join(work, storeFileName), ...copied].reduce((n, f) => n + statSync(f).size, 0);
      const payloadFiles = copied.filter((f) => dirname(f) === join(work, payloadDirName)).length;
      if (existsSync(dest)) rmdirSync(dest);
      renameSync(work, dest);
      syncFile(dirname(dest));
      return { deliveries: check.deliveries, schemaVersion: check.schemaVersion, payloadFiles, bytes, attempts: attempt };
    }
    throw new BackupError(`payload files kept changing under the copy (${MAX_ATTEMPTS} attempts); try again`);
  } finally {
    db.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Copies the payload log's files (and a spool file from before schema 13); returns the copies' paths. */
function copyPayloads(dataDir: string, work: string): string[] {
  const copied: string[] = [];
  const from = join(dataDir, payloadDirName);
  if (existsSync(from)) {
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const to = join(work, payloadDirName, entry.name);
      try {
        copyFileSync(join(from, entry.name), to);
      } catch (error) {
        // Collected since it was listed: the check below decides whether the copy needed it.
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw error;
      }
      copied.push(to);
    }
  }
  if (existsSync(join(dataDir, spoolFileName))) {
    copyFileSync(join(dataDir, spoolFileName), join(work, spoolFileName));
    copied.push(join(work, spoolFileName));
  }
  return copied;
}

/** Payload files the copied rows point past the end of (or at a file not copied). */
function checkCopy(work: string): { missing: string[]; deliveries: number; schemaVersion: number } {
  const db = new Database(join(work, storeFileName), { readonly: true, fileMustExist: true });
  try {
    const schemaVersion = db.pragma("user_version", { simple: true }) as number;
    const deliveries = (db.prepare("SELECT count(*) AS n FROM deliveries").get() as { n: number }).n;
    const hasRefs = (table: string) => (db.pragma(`table_info(${table})`) as { name: string }[]).some((c) => c.name === "payload_file");
    const parts = ["deliveries", "delivery_bodies"].filter(hasRefs).map((t) => `SELECT payload_file AS file, payload_offset + payload_length AS end FROM ${t} WHERE payload_file IS NOT NULL`);
    if (parts.length === 0) return { missing: [], deliveries, schemaVersion };
    const needed = db.prepare(`SELECT file, max(end) AS end FROM (${parts.join(" UNION ALL ")}) GROUP BY file`).all() as { file: string; end: number }[];
    const missing = needed.filter(({ file, end }) => {
      const path = join(work, payloadDirName, file);
      return !existsSync(path) || statSync(path).size < end;
    }).map((n) => n.file);
    return { missing, deliveries, schemaVersion };
  } finally {
    db.close();
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
