// One service per SQLite data directory. Two services on one directory (two pods on one volume,
// a second `steward start` on one host) would both claim and run the same deliveries; the store
// itself cannot tell them apart from the CLI, which may legitimately read it while the service runs.
// An exclusive lock on a file of its own is held for the service's lifetime; the kernel drops it
// when the process dies (kill -9 included), so a crashed service never blocks its successor.
import Database from "better-sqlite3";
import { hostname } from "node:os";
import { join } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";

export const serviceLockFileName = "service.lock";
const holderFileName = "service.lock.json";

export class DataDirInUseError extends Error {
  constructor(dataDir: string, holder: string) {
    super(
      `the data directory ${dataDir} is in use by another Steward service (${holder}). ` +
        "An embedded SQLite store serves exactly one process: stop the other one, or run several replicas on a shared store (STEWARD_REDIS_URL)",
    );
    this.name = "DataDirInUseError";
  }
}

export interface ServiceLock {
  release(): void;
}

export function holdServiceLock(dataDir: string): ServiceLock {
  // No busy timeout: a held lock is an answer, not something to wait out.
  const db = new Database(join(dataDir, serviceLockFileName), { timeout: 0 });
  try {
    // In exclusive locking mode the lock a write transaction takes is kept after it commits.
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec("BEGIN EXCLUSIVE");
    db.exec("COMMIT");
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY")
      throw new DataDirInUseError(dataDir, describeHolder(dataDir));
    throw error;
  }
  // Said in error messages only, to name the other process; the lock is what decides.
  writeFileSync(
    join(dataDir, holderFileName),
    JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }),
  );
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      db.close();
    },
  };
}

function describeHolder(dataDir: string): string {
  try {
    const h = JSON.parse(readFileSync(join(dataDir, holderFileName), "utf8")) as {
      pid?: number;
      host?: string;
      since?: string;
    };
    return `process ${h.pid ?? "?"} on ${h.host ?? "?"}, since ${h.since ?? "?"}`;
  } catch {
    return "holder unknown";
  }
}
