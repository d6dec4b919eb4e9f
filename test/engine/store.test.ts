import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteStore, storeFileName, type SqliteStore } from "../../src/store/sqlite.js";
import { deliveryOf, examplePayload, tempDir } from "./helpers.js";

let dir: string;
let cleanup: () => Promise<void>;
let store: SqliteStore;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  store = openSqliteStore(dir);
});
afterEach(async () => {
  store.close();
  await cleanup();
});

// The contract every backend keeps (kv, deliveries, tasks, leases) is test/store/contract.test.ts;
// here only what is SQLite's own: its durability setting and its schema upgrades.
describe("sqlite durability", () => {
  it("keeps recorded deliveries across a reopen with power-loss durability", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await store.deliveries.record(d);
    store.close();
    store = openSqliteStore(dir, { durability: "power" });
    expect((await store.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
    expect(await store.deliveries.record(d)).toBe("duplicate");
  });
});

describe("schema upgrade", () => {
  it("opens a version-1 store: its due index is replaced and its queued deliveries are still claimed", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await store.deliveries.record(d);
    store.close();
    // Back to version 1's shape: the same tables, one partial index over every unfinished status.
    const old = new Database(join(dir, storeFileName));
    old.exec(`
      DROP INDEX deliveries_ready;
      DROP INDEX deliveries_leased;
      CREATE INDEX deliveries_due ON deliveries (status, next_run_at) WHERE status IN ('queued', 'failed', 'running');
      PRAGMA user_version = 1;
    `);
    old.close();
    store = openSqliteStore(dir);
    const check = new Database(join(dir, storeFileName), { readonly: true });
    const indexes = (check.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").all() as { name: string }[]).map((r) => r.name);
    const version = check.pragma("user_version", { simple: true });
    check.close();
    expect(version).toBe(5);
    expect(indexes).toEqual(expect.arrayContaining(["deliveries_ready", "deliveries_leased", "deliveries_repository", "deliveries_event", "attempts_delivery", "deliveries_dead"]));
    expect(indexes).not.toContain("deliveries_due");
    expect((await store.deliveries.claimDelivery(60_000))?.delivery).toMatchObject({ id: d.id, payload: d.payload });
  });
});
