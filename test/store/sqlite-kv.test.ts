// The SQLite key-value part (src/store/sqlite/kv.ts): what its prefix listing costs. Listing must
// read the prefix's range of the key index, not every row: handlers list on deliveries of some
// events while the table holds weeks of decision facts.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openSchema } from "../../src/store/sqlite/schema.js";
import { LIST_BY_PREFIX_SQL, PURGE_EXPIRED_SQL, SqliteKv, TRIM_AUDIT_SQL } from "../../src/store/sqlite/kv.js";
import { PURGE_FINISHED_SQL } from "../../src/store/sqlite/deliveries.js";

describe("sqlite kv listing", () => {
  it("searches the key index for a prefix's range, with no scan of the table", () => {
    const db = new Database(":memory:");
    openSchema(db, ":memory:");
    const plan = (
      db.prepare(`EXPLAIN QUERY PLAN ${LIST_BY_PREFIX_SQL}`).all({ prefix: "deployments:wait:", now: 0 }) as {
        detail: string;
      }[]
    ).map((r) => r.detail);
    expect(plan.join("\n")).toMatch(/SEARCH kv USING INDEX \S+ \(key>\? AND key<\?\)/);
    expect(plan.join("\n")).not.toMatch(/SCAN kv/);
    db.close();
  });

  it("finds a prefix's few keys among many others, in key order", async () => {
    const db = new Database(":memory:");
    openSchema(db, ":memory:");
    const kv = new SqliteKv(db);
    const insert = db.prepare("INSERT INTO kv (key, value, expires_at, updated_at) VALUES (?, '1', NULL, 0)");
    db.transaction(() => {
      for (let i = 0; i < 20_000; i++) insert.run(`facts:rerun:acme/web:${String(i).padStart(15, "0")}`);
    })();
    await kv.set("deployments:wait:acme/web/b", 2);
    await kv.set("deployments:wait:acme/web/a", 1);
    expect((await kv.list("deployments:wait:")).map((e) => [e.key, e.value])).toEqual([
      ["deployments:wait:acme/web/a", 1],
      ["deployments:wait:acme/web/b", 2],
    ]);
    expect(await kv.list("facts:rerun:acme/web:00000000000001")).toHaveLength(10);
    db.close();
  });

  it("purges through indexes: expired entries by the expiry index, finished deliveries by the receipt index", () => {
    const db = new Database(":memory:");
    openSchema(db, ":memory:");
    const planOf = (sql: string, ...args: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join("\n");
    const kvPlan = planOf(PURGE_EXPIRED_SQL, 0, 1000);
    expect(kvPlan).toMatch(/SEARCH kv USING INDEX kv_expires \(expires_at>\? AND expires_at<\?\)/);
    expect(kvPlan).not.toMatch(/SCAN kv/);
    const deliveriesPlan = planOf(PURGE_FINISHED_SQL, 0, 0, 1000);
    expect(deliveriesPlan).toMatch(/SEARCH deliveries USING INDEX deliveries_received \(received_at<\?\)/);
    expect(deliveriesPlan).not.toMatch(/SCAN deliveries/);
    db.close();
  });

  it("trims the audit trail through its primary key", () => {
    const db = new Database(":memory:");
    openSchema(db, ":memory:");
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${TRIM_AUDIT_SQL}`).all(10, 100) as { detail: string }[])
      .map((r) => r.detail)
      .join("\n");
    expect(plan).toMatch(/SEARCH audit USING INTEGER PRIMARY KEY \(rowid<\?\)/);
    expect(plan).not.toMatch(/SCAN audit/);
    db.close();
  });

  it("catches a trail longer than its cap up a bounded batch at a time: writes, then housekeeping", async () => {
    const db = new Database(":memory:");
    openSchema(db, ":memory:");
    // Kept before the cap (or under a larger one): 1,000 entries.
    const uncapped = new SqliteKv(db, 10_000);
    for (let i = 0; i < 1_000; i++) await uncapped.audit({ kind: "deployment_answer", source: "t", details: { i } });
    const kv = new SqliteKv(db, 50);
    const count = () => db.prepare("SELECT count(*) FROM audit").pluck().get() as number;
    await kv.audit({ kind: "deployment_answer", source: "t", details: { i: 1_000 } });
    // One write removes at most a batch (100), not the 951 entries over the cap.
    expect(count()).toBe(901);
    await kv.audit({ kind: "deployment_answer", source: "t", details: { i: 1_001 } });
    expect(count()).toBe(802);
    expect(await kv.purgeExpired()).toBe(752);
    expect((await kv.auditLog()).map((e) => e.details.i)).toEqual(Array.from({ length: 50 }, (_, k) => 952 + k));
    // At the cap, each write removes the one oldest entry.
    await kv.audit({ kind: "secret_write", source: "t", details: { i: 1_002 } });
    expect((await kv.auditLog()).map((e) => e.details.i)).toEqual(Array.from({ length: 50 }, (_, k) => 953 + k));
    expect(await kv.purgeExpired()).toBe(0);
    db.close();
  });
});
