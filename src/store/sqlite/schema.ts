// The SQLite schema of the embedded store: deliveries and their per-handler outcomes,
// scheduled tasks, handler key/value state and the audit trail, all in one file.
import type { Database } from "better-sqlite3";
import { countDeliveries } from "./schema-counts.js";
import { writeTransaction } from "./write-transaction.js";

const schemaVersion = 13;

const statements = `
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY,
  event TEXT NOT NULL,
  action TEXT,
  installation_id INTEGER,
  repository TEXT,
  received_at INTEGER NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_run_at INTEGER NOT NULL,
  lease_token TEXT,
  lease_until INTEGER,
  last_error TEXT,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_received ON deliveries (received_at);

-- Bodies apart from the queue row: status updates then rewrite a small row, not the payload.
CREATE TABLE IF NOT EXISTS delivery_bodies (
  id TEXT PRIMARY KEY,
  headers TEXT NOT NULL,
  payload TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS outcomes (
  delivery_id TEXT NOT NULL,
  handler TEXT NOT NULL,
  status TEXT NOT NULL,
  detail TEXT,
  retryable INTEGER NOT NULL DEFAULT 1,
  attempts INTEGER NOT NULL,
  seconds REAL NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, handler)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS tasks (
  handler TEXT NOT NULL,
  key TEXT NOT NULL,
  run_at INTEGER NOT NULL,
  data TEXT NOT NULL,
  installation_id INTEGER,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  generation INTEGER NOT NULL DEFAULT 1,
  lease_token TEXT,
  lease_until INTEGER,
  last_error TEXT,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (handler, key)
);
CREATE INDEX IF NOT EXISTS tasks_due ON tasks (status, run_at);
CREATE INDEX IF NOT EXISTS tasks_lease ON tasks (lease_token) WHERE lease_token IS NOT NULL;

CREATE TABLE IF NOT EXISTS kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  expires_at INTEGER,
  updated_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  source TEXT NOT NULL,
  details TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_kind ON audit (kind, id);
`;

/**
 * Steps from version n to n + 1, index n - 1. Each must be safe on a file that already has
 * its effect (IF NOT EXISTS), because a fresh file runs them all after `statements`.
 */
const upgrades: (string | ((db: Database) => void))[] = [
  // 1 -> 2: claiming scanned every delivery ever kept (an OR the planner cannot index, ordered
  // across both arms). Now one partial index per arm, each holding only the rows it serves, so
  // finished deliveries (the bulk) are in neither; the claim reads both arms separately.
  // status and id make the ready index covering: SQLite re-checks an IN term against the row.
  `
  DROP INDEX IF EXISTS deliveries_due;
  CREATE INDEX IF NOT EXISTS deliveries_ready ON deliveries (next_run_at, received_at, status, id) WHERE status IN ('queued', 'failed');
  CREATE INDEX IF NOT EXISTS deliveries_leased ON deliveries (lease_until) WHERE status = 'running';
  `,
  // 2 -> 3: the console lists deliveries newest first by repository, by event and dead letters,
  // a page at a time (keyset on received_at, rowid); the dead index holds only dead letters.
  `
  CREATE INDEX IF NOT EXISTS deliveries_repository ON deliveries (repository, received_at);
  CREATE INDEX IF NOT EXISTS deliveries_event ON deliveries (event, received_at);
  CREATE INDEX IF NOT EXISTS deliveries_dead ON deliveries (received_at) WHERE status = 'dead';
  `,
  // 3 -> 4: every handler run kept (outcomes holds the last one only), for `deliveries show`.
  `
  CREATE TABLE IF NOT EXISTS attempts (
    seq INTEGER PRIMARY KEY,
    delivery_id TEXT NOT NULL,
    handler TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    status TEXT NOT NULL,
    detail TEXT,
    at INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS attempts_delivery ON attempts (delivery_id, seq);
  `,
  // 4 -> 5: the console's "handler outcome: failed" filter reads the failed outcomes directly
  // instead of probing every recent delivery; partial, so the outcomes written on the hot path
  // (done, skipped: nearly all) are in no index but the primary key.
  `
  CREATE INDEX IF NOT EXISTS outcomes_failed ON outcomes (handler, delivery_id) WHERE status = 'failed';
  `,
  // 5 -> 6: per-minute and dead-letter counts kept by triggers, for the console's overview (schema-counts.ts).
  countDeliveries,
  // 6 -> 7: the lease-token index goes. Every delivery entered it at its lease and left it at its
  // finish (two index writes per delivery, on the intake's hot path) for lookups that are rare (a
  // renewal every third of a lease, a release) and that the running-rows index serves: a leased
  // row is always 'running', and only the running rows are in deliveries_leased.
  `
  DROP INDEX IF EXISTS deliveries_lease;
  `,
  // 7 -> 8: the highest spool frame number moved into the tables (spool.ts), written in the commit
  // that moves it, so frames a crash leaves in the spool are moved once and never again.
  `
  CREATE TABLE IF NOT EXISTS spool_moved (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
  `,
  // 8 -> 9: payloads in the payload log (payload-log.ts): the body row says where, and its payload
  // column is empty. Rows written before keep their payload inline and are read as before.
  (db) => addMissingColumns(db, "delivery_bodies", [["payload_file", "TEXT"], ["payload_offset", "INTEGER"], ["payload_length", "INTEGER"]]),
  // 9 -> 10: with the payload in the log, a body row is a few hundred bytes, and writing it as a
  // second row cost a second B-tree and its id index (a random page per delivery, as delivery ids
  // are random): a third of the intake's SQLite time. New rows keep headers and the payload's
  // place in the queue row; a row whose `headers` is NULL has its body in delivery_bodies (rows
  // from before, and stores that keep payloads inline).
  (db) => addMissingColumns(db, "deliveries", [["headers", "TEXT"], ["payload_file", "TEXT"], ["payload_offset", "INTEGER"], ["payload_length", "INTEGER"]]),
  // 10 -> 11: the hourly purge of expired entries found them by reading the table from its start
  // (no index on expires_at): each batch of 1,000 read past every live entry before them, and the
  // last batch read the whole table, on the event loop. Partial: entries without an expiry (kept
  // until deleted) are in no index but the key's.
  `
  CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // 11 -> 12: a handler's latest run is its outcome row, and `attempts` keeps the runs before it,
  // each logged when the next one replaces it: a delivery run once (nearly all of them) writes no
  // attempt row, a row and an index entry at a random page less per handler run. `logged` says
  // whether the outcome's run is in `attempts` already: every row written before was logged as it
  // was written, so they default to 1.
  (db) => addMissingColumns(db, "outcomes", [["logged", "INTEGER NOT NULL DEFAULT 1"]]),
  // 12 -> 13: spooled deliveries are frames in the payload log, no longer in a ring file of their
  // own (spool.ts): the mark also says where the last moved frame ends, where recovery reads from.
  (db) => addMissingColumns(db, "spool_moved", [["log_file", "TEXT"], ["log_offset", "INTEGER"]]),
];

/** Adds the columns `table` lacks (a step that added some before it failed is run again whole). */
function addMissingColumns(db: Database, table: string, columns: [name: string, type: string][]): void {
  const has = new Set((db.pragma(`table_info(${table})`) as { name: string }[]).map((c) => c.name));
  for (const [name, type] of columns) if (!has.has(name)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${type}`);
}

export function migrate(db: Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > schemaVersion) {
    throw new Error(`store schema version ${current} is newer than this Steward understands (${schemaVersion})`);
  }
  if (current === schemaVersion) return;
  writeTransaction(db, () => {
    // Another process may have migrated between the look above and this transaction's lock.
    const current = db.pragma("user_version", { simple: true }) as number;
    if (current === schemaVersion) return;
    if (current === 0) db.exec(statements);
    for (const step of upgrades.slice(Math.max(0, current - 1))) {
      if (typeof step === "string") db.exec(step);
      else step(db);
    }
    db.pragma(`user_version = ${schemaVersion}`);
  })();
}
