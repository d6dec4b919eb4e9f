// The PostgreSQL store's schema: versioned, forward-only migrations, applied at start by one
// replica at a time (under an advisory lock, the others wait for it and then find nothing left
// to do). A schema newer than this code is refused: an older Steward must not write to tables
// whose meaning it does not know.
import type pg from "pg";
import { ident } from "./connect.js";

export interface Migration {
  version: number;
  description: string;
  /** Statements run in one transaction; `s` is the quoted schema name. */
  sql(s: string): string;
}

// Times are timestamptz written from the replicas' clocks (as on Redis): leases and due times
// compare against the clock of the replica asking. Payloads and headers are kept as text, as
// received: jsonb would reorder keys and refuse some valid JSON (\u0000).
const v1: Migration = {
  version: 1,
  description: "deliveries, outcomes, runs, tasks, handler state, audit trail, coordination",
  sql: (s) => `
CREATE TABLE ${s}.deliveries (
  id text PRIMARY KEY,
  event text NOT NULL,
  action text,
  installation_id bigint,
  repository text,
  headers text NOT NULL,
  payload text NOT NULL,
  received_at timestamptz NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  next_run_at timestamptz NOT NULL,
  last_error text,
  updated_at timestamptz NOT NULL,
  lease_token text,
  lease_until timestamptz
);
-- Claims walk due work in due order; running rows stay in it so an expired lease is found too.
CREATE INDEX deliveries_due ON ${s}.deliveries (next_run_at, id) WHERE status IN ('queued', 'failed', 'running');
CREATE INDEX deliveries_lease ON ${s}.deliveries (lease_token) WHERE lease_token IS NOT NULL;
CREATE INDEX deliveries_running ON ${s}.deliveries (lease_until) WHERE status = 'running';
-- Retention: done deliveries by the time they finished.
CREATE INDEX deliveries_done ON ${s}.deliveries (updated_at) WHERE status = 'done';
-- Reading for people: newest first, overall and by repository, event and dead letters.
CREATE INDEX deliveries_received ON ${s}.deliveries (received_at DESC, id DESC);
CREATE INDEX deliveries_repository ON ${s}.deliveries (repository, received_at DESC, id DESC);
CREATE INDEX deliveries_event ON ${s}.deliveries (event, received_at DESC, id DESC);
CREATE INDEX deliveries_dead ON ${s}.deliveries (received_at DESC, id DESC) WHERE status = 'dead';

CREATE TABLE ${s}.outcomes (
  delivery_id text NOT NULL REFERENCES ${s}.deliveries (id) ON DELETE CASCADE,
  handler text NOT NULL,
  status text NOT NULL,
  detail text,
  retryable boolean NOT NULL,
  attempts integer NOT NULL,
  seconds double precision NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (delivery_id, handler)
);
CREATE INDEX outcomes_failed ON ${s}.outcomes (handler, delivery_id) WHERE status = 'failed';

-- Every handler run, for 'deliveries show' (the last ones of a delivery, capped by the writer).
CREATE TABLE ${s}.runs (
  seq bigserial PRIMARY KEY,
  delivery_id text NOT NULL REFERENCES ${s}.deliveries (id) ON DELETE CASCADE,
  handler text NOT NULL,
  attempt integer NOT NULL,
  status text NOT NULL,
  detail text,
  at timestamptz NOT NULL
);
CREATE INDEX runs_delivery ON ${s}.runs (delivery_id, seq);

CREATE TABLE ${s}.tasks (
  handler text NOT NULL,
  key text NOT NULL,
  run_at timestamptz NOT NULL,
  data text NOT NULL,
  installation_id bigint,
  status text NOT NULL CHECK (status IN ('pending', 'running', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  generation integer NOT NULL DEFAULT 1,
  lease_token text,
  lease_until timestamptz,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (handler, key)
);
CREATE INDEX tasks_due ON ${s}.tasks (run_at) WHERE status IN ('pending', 'running');
CREATE INDEX tasks_lease ON ${s}.tasks (lease_token) WHERE lease_token IS NOT NULL;
CREATE INDEX tasks_running ON ${s}.tasks (lease_until) WHERE status = 'running';

-- Handler state; byte order (COLLATE "C") so a prefix is one range of the primary key.
CREATE TABLE ${s}.kv (
  key text COLLATE "C" PRIMARY KEY,
  value text NOT NULL,
  updated_at timestamptz NOT NULL,
  expires_at timestamptz
);
CREATE INDEX kv_expires ON ${s}.kv (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE ${s}.audit (
  seq bigserial PRIMARY KEY,
  kind text NOT NULL,
  source text NOT NULL,
  details text NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX audit_kind ON ${s}.audit (kind, seq);

-- Readiness's probe writes (canRecord): written and removed in one transaction.
CREATE TABLE ${s}.record_probe (
  id bigserial PRIMARY KEY,
  body text NOT NULL
);

-- Cross-replica coordination: leases (locks, job leases, write slots) and shared entries
-- (sealed tokens, the replica registry), each expiring.
CREATE TABLE ${s}.leases (
  name text COLLATE "C" PRIMARY KEY,
  holder text NOT NULL,
  value text,
  expires_at timestamptz NOT NULL
);
`,
};

// Replicas coordinating on PostgreSQL alone (src/coordination/postgres/). Times here are the
// server's (clock_timestamp()), as Redis's TIME is for the Redis slots: replicas with skewed
// clocks still agree on a write's spacing and on when a dead holder's hold lapsed.
const v2: Migration = {
  version: 2,
  description: "write slots, shared sealed tokens and the replica registry",
  sql: (s) => `
-- One row per installation that wrote: who holds its write slot (until when, renewed while the
-- write is in flight), the gap the holder asked for, and when its next write may leave.
CREATE TABLE ${s}.write_slots (
  installation text COLLATE "C" PRIMARY KEY,
  holder text,
  held_until timestamptz,
  gap_ms integer NOT NULL DEFAULT 0,
  next_at timestamptz NOT NULL
);

-- Installation tokens, sealed (AES-256-GCM under a key derived from the app's private key), one
-- row per auth-app cache key; a row past its expiry is never read and is removed by the next mint.
CREATE TABLE ${s}.tokens (
  name text COLLATE "C" PRIMARY KEY,
  sealed text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX tokens_expires ON ${s}.tokens (expires_at);

-- Live replicas: each rewrites its row every second; one not seen for a few seconds is dead.
CREATE TABLE ${s}.replicas (
  id text PRIMARY KEY,
  entry text NOT NULL,
  seen_at timestamptz NOT NULL
);
`,
};

/** Every migration, in order. Applied ones are never edited: a change is a new version. */
const v3: Migration = {
  version: 3,
  description: "retrying deliveries newest first, for the console",
  sql: (s) => `
-- The overview's retrying count and the list's status filter: without it, every waiting
-- delivery is read and sorted by receipt for one page.
CREATE INDEX deliveries_failed ON ${s}.deliveries (received_at DESC, id DESC) WHERE status = 'failed';
`,
};

// The queue leaves the delivery row: claims, lease renewals and hand-backs touch a narrow row of
// its own with two indexes, where they rewrote the delivery's row and its nine indexes. A
// delivery's row is written at intake and at its finish; while it waits or runs, its queue row
// says when it is due, who holds it and its attempts so far. "running" is no longer stored in
// deliveries.status: a delivery with a leased queue row is running. Payloads are compressed with
// lz4 where the server has it (PostgreSQL 14+ built with it): pglz costs the intake several times
// the CPU for a slightly smaller row.
const v4: Migration = {
  version: 4,
  description: "the queue in a table of its own; payloads compressed with lz4",
  sql: (s) => `
CREATE TABLE ${s}.queue (
  id text PRIMARY KEY,
  -- When it is due: recorded, a retry's time, replayed or given back. A claim leaves it as it is,
  -- so an expired lease is taken back in its turn.
  run_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  lease_token text,
  lease_until timestamptz
);
INSERT INTO ${s}.queue (id, run_at, attempts, lease_token, lease_until)
  SELECT id, next_run_at, attempts, CASE WHEN status = 'running' THEN lease_token END,
    CASE WHEN status = 'running' THEN coalesce(lease_until, now()) END
  FROM ${s}.deliveries WHERE status IN ('queued', 'failed', 'running');
UPDATE ${s}.deliveries SET status = 'queued' WHERE status = 'running';
CREATE INDEX queue_due ON ${s}.queue (run_at, id);
CREATE INDEX queue_lease ON ${s}.queue (lease_token) WHERE lease_token IS NOT NULL;
DROP INDEX ${s}.deliveries_due;
DROP INDEX ${s}.deliveries_lease;
DROP INDEX ${s}.deliveries_running;
-- A Steward of an earlier version still running fails on these (its intake answers 503, GitHub's
-- delivery stays redeliverable) rather than recording deliveries no queue row would ever run.
ALTER TABLE ${s}.deliveries DROP COLUMN next_run_at, DROP COLUMN lease_token, DROP COLUMN lease_until;
DO $steward$
BEGIN
  IF current_setting('server_version_num')::int >= 140000 THEN
    EXECUTE 'ALTER TABLE ${s.replace(/'/g, "''")}.deliveries ALTER COLUMN payload SET COMPRESSION lz4';
  END IF;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
  NULL; -- a server built without lz4 keeps pglz
END $steward$;
`,
};

export const migrations: readonly Migration[] = [v1, v2, v3, v4];

export const schemaVersion = migrations[migrations.length - 1]!.version;

/** Two-key advisory lock: one class for Steward's migrations, one key per schema. */
const lockSql = "SELECT pg_advisory_lock(hashtext('steward-migrations'), hashtext($1))";
const unlockSql = "SELECT pg_advisory_unlock(hashtext('steward-migrations'), hashtext($1))";

export class NewerSchemaError extends Error {
  constructor(schema: string, found: number, known: number) {
    super(
      `the PostgreSQL schema "${schema}" is at version ${found}, newer than this Steward knows (${known}): ` +
        "a newer Steward has migrated it. Run that version (or a later one); migrations are forward-only",
    );
    this.name = "NewerSchemaError";
  }
}

/**
 * Bring `schema` to the newest version this code knows, each migration in its own transaction.
 * Holds the advisory lock while checking and applying, so replicas starting together migrate
 * once; the others wait here, then find the schema current. Returns the versions applied.
 */
export async function migrate(
  client: pg.ClientBase,
  schema: string,
  all: readonly Migration[] = migrations,
): Promise<number[]> {
  const s = ident(schema);
  const known = all[all.length - 1]!.version;
  await client.query(lockSql, [schema]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.migrations`);
    const current = rows[0]?.v ?? 0;
    if (current > known) throw new NewerSchemaError(schema, current, known);
    const applied: number[] = [];
    for (const m of all) {
      if (m.version <= current) continue;
      await client.query("BEGIN");
      try {
        await client.query(m.sql(s));
        await client.query(`INSERT INTO ${s}.migrations (version, description) VALUES ($1, $2)`, [
          m.version,
          m.description,
        ]);
        await client.query("COMMIT");
      } catch (e) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw new Error(
          `PostgreSQL schema "${schema}": migration ${m.version} (${m.description}) failed: ${(e as Error).message}`,
          { cause: e },
        );
      }
      applied.push(m.version);
    }
    return applied;
  } finally {
    await client.query(unlockSql, [schema]).catch(() => undefined);
  }
}
