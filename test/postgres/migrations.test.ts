// Schema migrations of the PostgreSQL store: applied once, by one replica at a time under an
// advisory lock while the others wait, and a schema newer than the code refused with a clear message.
import { afterEach, describe, expect, it, vi } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/store.js";
import { schemaVersion } from "../../src/store/postgres/schema.js";
import { dropSchema, postgresUp, postgresUrl, uniqueSchema, withClient } from "./support.js";

const opened: PostgresStore[] = [];
const schemas: string[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
  for (const s of schemas.splice(0)) await dropSchema(s);
});

function schema(): string {
  const s = uniqueSchema();
  schemas.push(s);
  return s;
}

async function open(s: string): Promise<PostgresStore> {
  const store = await openPostgresStore(postgresUrl, { schema: s, maxConnections: 2 });
  opened.push(store);
  return store;
}

const versions = (s: string) =>
  withClient(async (c) =>
    (await c.query<{ version: number }>(`SELECT version FROM "${s}".migrations ORDER BY version`)).rows.map(
      (r) => r.version,
    ),
  );

describe.skipIf(!postgresUp)("postgres schema migrations", () => {
  it("creates the schema at the newest version once; opening again applies nothing", async () => {
    const s = schema();
    const first = await open(s);
    expect(await versions(s)).toEqual(Array.from({ length: schemaVersion }, (_, i) => i + 1));
    await first.kv.set("kept", 1);
    const second = await open(s);
    expect(await versions(s)).toEqual(Array.from({ length: schemaVersion }, (_, i) => i + 1));
    expect(await second.kv.get("kept")).toBe(1);
  });

  it("replicas starting together wait for the one migrating, then find the schema current", async () => {
    const s = schema();
    await withClient(async (holder) => {
      // Another replica is migrating: it holds the lock the store takes first.
      await holder.query("SELECT pg_advisory_lock(hashtext('steward-migrations'), hashtext($1))", [s]);
      let settled = false;
      const starting = [open(s), open(s)];
      void Promise.all(starting).finally(() => (settled = true));
      // Both wait on the lock (seen in pg_locks), and neither has created anything meanwhile.
      await vi.waitFor(
        async () => {
          const { rows } = await holder.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
          );
          expect(rows[0]!.n).toBeGreaterThanOrEqual(2);
        },
        { timeout: 20_000, interval: 50 },
      );
      expect(settled).toBe(false);
      const { rows } = await holder.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [s]);
      expect(rows).toHaveLength(0);
      await holder.query("SELECT pg_advisory_unlock(hashtext('steward-migrations'), hashtext($1))", [s]);
      const [a, b] = await Promise.all(starting);
      await a!.kv.set("from-a", true);
      expect(await b!.kv.get("from-a")).toBe(true);
    });
    expect(await versions(s)).toEqual(Array.from({ length: schemaVersion }, (_, i) => i + 1));
  });

  it("refuses a schema newer than the code, saying what to do", async () => {
    const s = schema();
    await open(s);
    await withClient((c) =>
      c.query(`INSERT INTO "${s}".migrations (version, description) VALUES ($1, 'from the future')`, [
        schemaVersion + 1,
      ]),
    );
    await expect(open(s)).rejects.toThrow(
      new RegExp(
        `schema "${s}" is at version ${schemaVersion + 1}, newer than this Steward knows \\(${schemaVersion}\\).*Run that version`,
      ),
    );
  });
});
