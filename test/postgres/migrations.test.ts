// Schema migrations of the PostgreSQL store: applied once, by one replica at a time under an
// advisory lock while the others wait, and a schema newer than the code refused with a clear message.
import { afterEach, describe, expect, it, vi } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/store.js";
import { migrate, migrations, schemaVersion } from "../../src/store/postgres/schema.js";
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

  it("moves a version 3 queue into its own table: waiting, running, retrying and finished deliveries kept as they were", async () => {
    const s = schema();
    const q = `"${s}"`;
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);
    const leaseToken = "host/1/lease-of-running";
    await withClient(async (c) => {
      await migrate(c, s, migrations.slice(0, 3));
      const row = (
        id: string,
        status: string,
        extra: { attempts?: number; next?: Date; token?: string; until?: Date; error?: string },
      ) =>
        c.query(
          `INSERT INTO ${q}.deliveries (id, event, action, installation_id, repository, headers, payload, received_at, status,
             attempts, next_run_at, last_error, updated_at, lease_token, lease_until)
           VALUES ($1, 'push', NULL, 7, 'o/r', '{"x-github-event":"push"}', $2, $3, $4, $5, $6, $7, $3, $8, $9)`,
          [
            id,
            `{"id":"${id}"}`,
            at(0),
            status,
            extra.attempts ?? 0,
            extra.next ?? at(0),
            extra.error ?? null,
            extra.token ?? null,
            extra.until ?? null,
          ],
        );
      await row("waiting", "queued", {});
      await row("running", "running", { attempts: 1, token: leaseToken, until: new Date(Date.now() + 60_000) });
      await row("retrying", "failed", { attempts: 2, next: at(5_000), error: "h: boom" });
      await row("finished", "done", { attempts: 1 });
      await row("parked", "dead", { attempts: 5, error: "h: gone" });
      await c.query(
        `INSERT INTO ${q}.outcomes (delivery_id, handler, status, detail, retryable, attempts, seconds, updated_at)
         VALUES ('parked', 'h', 'failed', 'gone', false, 5, 0.1, $1), ('retrying', 'h', 'failed', 'boom', true, 2, 0.1, $1)`,
        [at(0)],
      );
    });
    const store = await open(s);
    expect(await versions(s)).toEqual(Array.from({ length: schemaVersion }, (_, i) => i + 1));
    const status = async (id: string) => (await store.deliveries.getDelivery(id))?.delivery;
    expect(await status("waiting")).toMatchObject({ status: "queued", attempts: 0, payload: '{"id":"waiting"}' });
    expect(await status("running")).toMatchObject({ status: "running", attempts: 1 });
    expect(await status("retrying")).toMatchObject({
      status: "failed",
      attempts: 2,
      nextRunAt: at(5_000),
      lastError: "h: boom",
    });
    expect(await status("finished")).toMatchObject({ status: "done", attempts: 1 });
    expect(await status("parked")).toMatchObject({ status: "dead", attempts: 5, lastError: "h: gone" });
    expect((await store.deliveries.getDelivery("parked"))?.outcomes).toMatchObject([{ handler: "h", attempts: 5 }]);
    expect(await store.deliveries.depth()).toBe(3);
    // An earlier Steward still running cannot record a delivery no queue row would run: it fails (503).
    await expect(
      withClient((c) =>
        c.query(
          `INSERT INTO ${q}.deliveries (id, event, headers, payload, received_at, status, next_run_at, updated_at)
           VALUES ('late', 'push', '{}', '{}', now(), 'queued', now(), now())`,
        ),
      ),
    ).rejects.toThrow(/next_run_at/);
    // The run that held its lease before the migration still holds it, and finishes.
    expect(await store.leases.renewLease(leaseToken, 60_000)).toBe(true);
    expect(await store.deliveries.finishDelivery(leaseToken, "running", { status: "done" })).toBe(true);
    expect(await status("running")).toMatchObject({ status: "done", attempts: 1 });
    // The waiting and the retrying (its time has come) are claimed, each counting an attempt.
    const claimed = await store.deliveries.claimDeliveries(60_000, 5);
    expect(claimed.map((c) => [c.delivery.id, c.delivery.attempts]).sort()).toEqual([
      ["retrying", 3],
      ["waiting", 1],
    ]);
    expect(claimed.find((c) => c.delivery.id === "retrying")?.outcomes).toMatchObject([
      { handler: "h", retryable: true },
    ]);
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
