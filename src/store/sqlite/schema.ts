// The SQLite store's schema: deliveries (headers and payload in a table of their own) with their
// per-handler outcomes and runs, scheduled tasks, handler key/value state, the audit trail, and the
// counts the console's overview reads. Version 1 (headers and payload in the delivery's row) is
// migrated at open; a file of any other version is refused, never guessed at.
import type { Database } from "better-sqlite3";
import { writeTransaction } from "./write-transaction.js";

export const SCHEMA_VERSION = 2;
/** Marks a file as this layout's ("STWD"): development builds before it wrote versions 1 to 13 without it. */
const APPLICATION_ID = 0x53545744;

// The console's overview counts deliveries per minute and status, and dead letters per
// repository. Counted from `deliveries`, both would read as many rows as a busy half hour or an
// outage left; triggers keep them in two small tables instead, whoever writes the rows (intake,
// worker, replay, purge, operator commands).
const minute = (row: "new" | "old") => `(${row}.received_at / 60000) * 60000`;
const repository = (row: "new" | "old") => `coalesce(${row}.repository, '')`;
const count = (row: "new" | "old", by: 1 | -1) =>
  `INSERT INTO delivery_minutes (minute, repository, status, count) VALUES (${minute(row)}, ${repository(row)}, ${row}.status, ${by})
     ON CONFLICT (minute, repository, status) DO UPDATE SET count = count + ${by};`;
const countDead = (row: "new" | "old", by: 1 | -1) =>
  `INSERT INTO dead_letters (repository, count) SELECT ${repository(row)}, ${by} WHERE ${row}.status = 'dead'
     ON CONFLICT (repository) DO UPDATE SET count = count + ${by};`;

// Indexes added after version 1 was released: an index changes no row, so they are made (if
// missing) in every file this version opens, and an older Steward reads the file as before.
// deliveries_failed: the overview's retrying count and the list's status filter, newest first,
// without sorting every delivery of the reader's repositories.
const LATER_INDEXES = `
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (received_at) WHERE status = 'failed';
`;

// A delivery's headers and payload, written once when it is recorded. In the delivery's row, every
// claim and finish wrote them into the write-ahead log again with the row (a changed status or
// lease token changes the record's size), and the log's volume sets how often a checkpoint holds
// the event loop (docs/decisions/0025-sqlite-payloads-in-a-table-of-their-own.md). Headers come
// first: the claim reads them, the run reads the payload when asked (deliveries.ts). Whoever
// deletes a delivery (purge, operator commands) deletes its payload through the trigger.
const PAYLOADS = `
CREATE TABLE payloads (
  id TEXT PRIMARY KEY,
  headers TEXT NOT NULL,
  payload TEXT NOT NULL
);
CREATE TRIGGER deliveries_payload_delete AFTER DELETE ON deliveries BEGIN
  DELETE FROM payloads WHERE id = old.id;
END;
`;

// Version 1 to 2: headers and payload move out of the delivery's row. DROP COLUMN rewrites the
// table (no index or trigger names either column); the pages it frees are reused by later writes.
const FROM_1 = `
${PAYLOADS}
INSERT INTO payloads (id, headers, payload) SELECT id, headers, payload FROM deliveries;
ALTER TABLE deliveries DROP COLUMN headers;
ALTER TABLE deliveries DROP COLUMN payload;
${LATER_INDEXES}
PRAGMA user_version = ${SCHEMA_VERSION};
`;

const CREATE = `
CREATE TABLE deliveries (
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
${PAYLOADS}
-- Claims read one partial index per arm (due, lease expired), so finished deliveries (the bulk)
-- are in neither; status and id make the due one covering.
CREATE INDEX deliveries_ready ON deliveries (next_run_at, received_at, status, id) WHERE status IN ('queued', 'failed');
CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE status = 'running';
-- The console's pages, newest first (keyset on received_at, rowid), and the purge by age.
CREATE INDEX deliveries_received ON deliveries (received_at);
CREATE INDEX deliveries_repository ON deliveries (repository, received_at);
CREATE INDEX deliveries_event ON deliveries (event, received_at);
CREATE INDEX deliveries_dead ON deliveries (received_at) WHERE status = 'dead';
${LATER_INDEXES}

-- Each handler's latest run on a delivery.
CREATE TABLE outcomes (
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
-- The console's "outcome: failed" filter; done and skipped outcomes (nearly all) are in no index but the key.
CREATE INDEX outcomes_failed ON outcomes (handler, delivery_id) WHERE status = 'failed';

-- Every handler run, for \`deliveries show\` (a replay clears outcomes, not these).
CREATE TABLE attempts (
  seq INTEGER PRIMARY KEY,
  delivery_id TEXT NOT NULL,
  handler TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  status TEXT NOT NULL,
  detail TEXT,
  at INTEGER NOT NULL
);
CREATE INDEX attempts_delivery ON attempts (delivery_id, seq);

CREATE TABLE tasks (
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
CREATE INDEX tasks_due ON tasks (status, run_at);
CREATE INDEX tasks_lease ON tasks (lease_token) WHERE lease_token IS NOT NULL;

CREATE TABLE kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  expires_at INTEGER,
  updated_at INTEGER NOT NULL
);
-- The purge of expired entries; entries kept until deleted are in no index but the key's.
CREATE INDEX kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  source TEXT NOT NULL,
  details TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX audit_kind ON audit (kind, id);

-- Deliveries by minute received (epoch ms, floored), repository ('' for none) and status.
CREATE TABLE delivery_minutes (
  minute INTEGER NOT NULL,
  repository TEXT NOT NULL,
  status TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (minute, repository, status)
) WITHOUT ROWID;
-- Dead letters by repository ('' for none).
CREATE TABLE dead_letters (
  repository TEXT PRIMARY KEY,
  count INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER deliveries_count_insert AFTER INSERT ON deliveries BEGIN
  ${count("new", 1)}
  ${countDead("new", 1)}
END;
CREATE TRIGGER deliveries_count_status AFTER UPDATE OF status ON deliveries WHEN old.status IS NOT new.status BEGIN
  ${count("old", -1)}
  ${count("new", 1)}
  ${countDead("old", -1)}
  ${countDead("new", 1)}
END;
-- Purged rows: their minute's counts go down, and a minute of a repository left all zero goes.
CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries BEGIN
  ${count("old", -1)}
  DELETE FROM delivery_minutes WHERE minute = ${minute("old")} AND repository = ${repository("old")} AND count = 0;
  ${countDead("old", -1)}
END;

PRAGMA application_id = ${APPLICATION_ID};
PRAGMA user_version = ${SCHEMA_VERSION};
`;

/** The data directory holds a store this version cannot read. */
export class StoreSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreSchemaError";
  }
}

/** Why `db` (in `dataDir`) cannot be read by this version; undefined when it can, or is new and empty. */
export function schemaProblem(db: Database, dataDir: string): string | undefined {
  const version = db.pragma("user_version", { simple: true }) as number;
  const application = db.pragma("application_id", { simple: true }) as number;
  const where = `STEWARD_DATA_DIR (${dataDir})`;
  const fresh = `point STEWARD_DATA_DIR at an empty directory (Steward creates its store there)`;
  if (application === APPLICATION_ID && (version === SCHEMA_VERSION || version === 1)) return undefined;
  if (application === APPLICATION_ID && version > SCHEMA_VERSION) {
    return `${where} holds a store written by a newer Steward (schema ${version}); this version reads schema ${SCHEMA_VERSION}. Run the newer version on it, or ${fresh}`;
  }
  if (application === 0 && version === 0) {
    const tables = db.prepare("SELECT count(*) FROM sqlite_master").pluck().get() as number;
    if (tables === 0) return undefined;
    return `${where} holds a SQLite file (steward.db) that is not a Steward store; move it away, or ${fresh}`;
  }
  if (application === 0) {
    return (
      `${where} holds a store written by a development build of Steward (schema ${version}); this version reads schema ${SCHEMA_VERSION}. ` +
      `Keep that directory for reference and ${fresh} (to keep a copy, run \`steward backup\` with the version that wrote it)`
    );
  }
  return `${where} holds a SQLite file (steward.db) of another application; move it away, or ${fresh}`;
}

/**
 * Creates the schema in a new file, migrates a version-1 file, or checks an existing one; throws
 * StoreSchemaError when it is none of these.
 */
export function openSchema(db: Database, dataDir: string): void {
  const check = () => {
    const problem = schemaProblem(db, dataDir);
    if (problem) throw new StoreSchemaError(problem);
  };
  check();
  if ((db.pragma("user_version", { simple: true }) as number) === SCHEMA_VERSION) {
    if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'deliveries_failed'").get())
      writeTransaction(db, () => db.exec(LATER_INDEXES))();
    return;
  }
  writeTransaction(db, () => {
    // Another process (the CLI, a restarting service) may have created or migrated it since the look above.
    check();
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version === 0) db.exec(CREATE);
    else if (version === 1) db.exec(FROM_1);
  })();
}
