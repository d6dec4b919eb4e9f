// The SQLite store's schema: deliveries (headers and payload in a table of their own) with their
// per-handler outcomes and runs, scheduled tasks, handler key/value state, the audit trail, and the
// counts the console's overview reads. Versions 1 (headers and payload in the delivery's row) and 2
// (a delivery's tables keyed by its id) are migrated at open; a file of any other version is
// refused, never guessed at.
import type { Database } from "better-sqlite3";
import { writeTransaction } from "./write-transaction.js";

export const SCHEMA_VERSION = 3;
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

// A delivery's row, its headers and payload, its handlers' outcomes and runs. Every table of a
// delivery is keyed by the delivery's `seq`, given in the order deliveries are recorded, not by its
// id (a random UUID): a key in arrival order puts the deliveries written together on the same few
// pages, where random keys dirtied a page of their own in each of four b-trees for each delivery
// (half of the write-ahead log a delivery wrote, and as many distinct pages for each checkpoint to
// copy and sync on the event loop: docs/decisions/0028-sqlite-tables-keyed-in-arrival-order.md).
// `seq` is an INTEGER PRIMARY KEY, so VACUUM keeps it. The id stays unique (duplicate deliveries
// are recognised by it); the claim and the finish find the row by it.
// Headers and payload are written once when a delivery is recorded, in a table of their own: in the
// delivery's row every claim and finish wrote them into the log again
// (docs/decisions/0025-sqlite-payloads-in-a-table-of-their-own.md). Headers come first: the claim
// reads them, the run reads the payload when asked (deliveries.ts).
const DELIVERY_TABLES = `
CREATE TABLE deliveries (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
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
CREATE TABLE payloads (
  delivery INTEGER PRIMARY KEY,
  headers TEXT NOT NULL,
  payload TEXT NOT NULL
);
-- Claims read one partial index per arm (due, lease expired), so finished deliveries (the bulk)
-- are in neither; status and id make the due one covering.
CREATE INDEX deliveries_ready ON deliveries (next_run_at, received_at, status, id) WHERE status IN ('queued', 'failed');
CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE status = 'running';
-- The console's pages, newest first (keyset on received_at, seq), and the purge by age.
CREATE INDEX deliveries_received ON deliveries (received_at);
CREATE INDEX deliveries_repository ON deliveries (repository, received_at);
CREATE INDEX deliveries_event ON deliveries (event, received_at);
CREATE INDEX deliveries_dead ON deliveries (received_at) WHERE status = 'dead';
-- The overview's retrying count and the list's status filter, newest first, without sorting every
-- delivery of the reader's repositories.
CREATE INDEX deliveries_failed ON deliveries (received_at) WHERE status = 'failed';

-- Each handler's latest run on a delivery.
CREATE TABLE outcomes (
  delivery INTEGER NOT NULL,
  handler TEXT NOT NULL,
  status TEXT NOT NULL,
  detail TEXT,
  retryable INTEGER NOT NULL DEFAULT 1,
  attempts INTEGER NOT NULL,
  seconds REAL NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (delivery, handler)
) WITHOUT ROWID;
-- The console's "outcome: failed" filter; done and skipped outcomes (nearly all) are in no index but the key.
CREATE INDEX outcomes_failed ON outcomes (handler, delivery) WHERE status = 'failed';

-- Every handler run, for \`deliveries show\` (a replay clears outcomes, not these).
CREATE TABLE attempts (
  seq INTEGER PRIMARY KEY,
  delivery INTEGER NOT NULL,
  handler TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  status TEXT NOT NULL,
  detail TEXT,
  at INTEGER NOT NULL
);
CREATE INDEX attempts_delivery ON attempts (delivery, seq);
`;

// Made after the rows are in place (a migration copies rows the counts already hold).
const DELIVERY_TRIGGERS = `
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
-- Whoever deletes a delivery (purge, operator commands) deletes the rows keyed by it, so that no
-- later delivery given a freed seq finds them.
CREATE TRIGGER deliveries_delete AFTER DELETE ON deliveries BEGIN
  DELETE FROM payloads WHERE delivery = old.seq;
  DELETE FROM outcomes WHERE delivery = old.seq;
  DELETE FROM attempts WHERE delivery = old.seq;
END;
`;

// Version 1 to 2, as released with version 2: headers and payload move out of the delivery's row.
// DROP COLUMN rewrites the table (no index or trigger names either column).
const FROM_1 = `
CREATE TABLE payloads (
  id TEXT PRIMARY KEY,
  headers TEXT NOT NULL,
  payload TEXT NOT NULL
);
CREATE TRIGGER deliveries_payload_delete AFTER DELETE ON deliveries BEGIN
  DELETE FROM payloads WHERE id = old.id;
END;
INSERT INTO payloads (id, headers, payload) SELECT id, headers, payload FROM deliveries;
ALTER TABLE deliveries DROP COLUMN headers;
ALTER TABLE deliveries DROP COLUMN payload;
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (received_at) WHERE status = 'failed';
PRAGMA user_version = 2;
`;

// Version 2 to 3: the delivery's tables keyed by seq. The version-2 tables are renamed aside
// (their indexes and triggers dropped first, so the names are free and nothing fires on the copy),
// the new ones made as a new store makes them and filled (a delivery keeps its rowid as its seq, so
// the console's page positions hold), then the old ones dropped. The counts are kept as they are.
const FROM_2 = `
DROP TRIGGER deliveries_count_insert;
DROP TRIGGER deliveries_count_status;
DROP TRIGGER deliveries_count_delete;
DROP TRIGGER deliveries_payload_delete;
DROP INDEX deliveries_ready;
DROP INDEX deliveries_leased;
DROP INDEX deliveries_received;
DROP INDEX deliveries_repository;
DROP INDEX deliveries_event;
DROP INDEX deliveries_dead;
DROP INDEX IF EXISTS deliveries_failed;
DROP INDEX outcomes_failed;
DROP INDEX attempts_delivery;
ALTER TABLE deliveries RENAME TO deliveries_2;
ALTER TABLE payloads RENAME TO payloads_2;
ALTER TABLE outcomes RENAME TO outcomes_2;
ALTER TABLE attempts RENAME TO attempts_2;
${DELIVERY_TABLES}
INSERT INTO deliveries (seq, id, event, action, installation_id, repository, received_at, status, attempts,
    next_run_at, lease_token, lease_until, last_error, updated_at)
  SELECT rowid, id, event, action, installation_id, repository, received_at, status, attempts,
    next_run_at, lease_token, lease_until, last_error, updated_at FROM deliveries_2 ORDER BY rowid;
INSERT INTO payloads (delivery, headers, payload)
  SELECT d.seq, p.headers, p.payload FROM payloads_2 p JOIN deliveries d ON d.id = p.id ORDER BY d.seq;
INSERT INTO outcomes (delivery, handler, status, detail, retryable, attempts, seconds, updated_at)
  SELECT d.seq, o.handler, o.status, o.detail, o.retryable, o.attempts, o.seconds, o.updated_at
  FROM outcomes_2 o JOIN deliveries d ON d.id = o.delivery_id;
INSERT INTO attempts (seq, delivery, handler, attempt, status, detail, at)
  SELECT a.seq, d.seq, a.handler, a.attempt, a.status, a.detail, a.at
  FROM attempts_2 a JOIN deliveries d ON d.id = a.delivery_id ORDER BY a.seq;
${DELIVERY_TRIGGERS}
DROP TABLE deliveries_2;
DROP TABLE payloads_2;
DROP TABLE outcomes_2;
DROP TABLE attempts_2;
PRAGMA user_version = 3;
`;

const CREATE = `
${DELIVERY_TABLES}
${DELIVERY_TRIGGERS}

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
  if (application === APPLICATION_ID && version >= 1 && version <= SCHEMA_VERSION) return undefined;
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
 * Creates the schema in a new file, migrates a version-1 or -2 file, or checks an existing one;
 * throws StoreSchemaError when it is none of these.
 */
export function openSchema(db: Database, dataDir: string): void {
  const check = () => {
    const problem = schemaProblem(db, dataDir);
    if (problem) throw new StoreSchemaError(problem);
  };
  check();
  if ((db.pragma("user_version", { simple: true }) as number) === SCHEMA_VERSION) return;
  writeTransaction(db, () => {
    // Another process (the CLI, a restarting service) may have created or migrated it since the look above.
    check();
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version === 0) db.exec(CREATE);
    if (version === 1) db.exec(FROM_1);
    if (version === 1 || version === 2) db.exec(FROM_2);
  })();
}
