// The SQLite schema of the embedded store: deliveries and their per-handler outcomes,
// scheduled tasks, handler key/value state and the audit trail, all in one file.
import type { Database } from "better-sqlite3";

const schemaVersion = 1;

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
-- Partial indexes: finished deliveries (the bulk) and unleased rows stay out of them.
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_run_at) WHERE status IN ('queued', 'failed', 'running');
CREATE INDEX IF NOT EXISTS deliveries_received ON deliveries (received_at);
CREATE INDEX IF NOT EXISTS deliveries_lease ON deliveries (lease_token) WHERE lease_token IS NOT NULL;

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

export function migrate(db: Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > schemaVersion) {
    throw new Error(`store schema version ${current} is newer than this Steward understands (${schemaVersion})`);
  }
  if (current === schemaVersion) return;
  db.transaction(() => {
    db.exec(statements);
    db.pragma(`user_version = ${schemaVersion}`);
  })();
}
