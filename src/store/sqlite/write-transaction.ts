// Every transaction of the store that writes takes SQLite's write lock at BEGIN (IMMEDIATE). Other
// processes commit beside the service (the CLI replaying or purging). A DEFERRED transaction that
// reads first holds only a read snapshot, and when another connection commits before its first
// write SQLite refuses the upgrade at once with SQLITE_BUSY ("database is locked"): busy_timeout
// cannot help, as waiting would not make the snapshot current. Taking the lock first waits out the
// other writer (busy_timeout) instead.
import type { Database } from "better-sqlite3";

/** `fn` as one IMMEDIATE transaction (a savepoint when called inside another transaction). */
export function writeTransaction<A extends unknown[], R>(db: Database, fn: (...args: A) => R): (...args: A) => R {
  return db.transaction(fn).immediate;
}
