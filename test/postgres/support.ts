// PostgreSQL test scaffolding: whether a PostgreSQL answers at 127.0.0.1:5432 (tests skip with
// a printed reason when not), a schema of its own per test, and its removal after.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/store.js";

// Commits need not reach the disk for these tests (a kill of Steward loses nothing either way;
// only a crash of the server would): libpq's `options`, so the store's own code is unchanged.
export const postgresUrl =
  process.env.STEWARD_TEST_POSTGRES_URL ??
  "postgres://postgres@127.0.0.1:5432/test?options=-c%20synchronous_commit%3Doff";

async function probe(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return undefined;
  } catch (e) {
    return (e as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const unreachable = await probe();
export const postgresUp = unreachable === undefined;
if (!postgresUp) console.warn(`PostgreSQL tests skipped: no PostgreSQL at ${postgresUrl} (${unreachable})`);

export function uniqueSchema(): string {
  return `steward_test_${randomUUID().replace(/-/g, "")}`;
}

/** Run `fn` on a connection of its own to the test database. */
export async function withClient<T>(fn: (client: pg.Client) => Promise<T>, url = postgresUrl): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await withClient((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** Stores opened by a test (several = several replicas), all in one fresh schema, closed and dropped by `dispose`. */
export function postgresStores(url = postgresUrl) {
  const schema = uniqueSchema();
  const opened: PostgresStore[] = [];
  return {
    schema,
    async open(opts: { auditCap?: number } = {}): Promise<PostgresStore> {
      const store = await openPostgresStore(url, { schema, maxConnections: 4, ...opts });
      opened.push(store);
      return store;
    },
    async dispose(): Promise<void> {
      await Promise.all(opened.map((s) => s.close()));
      await dropSchema(schema);
    },
  };
}
