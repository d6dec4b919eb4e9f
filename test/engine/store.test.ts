import { describe, expect, it } from "vitest";
import { join } from "node:path";
import Database from "better-sqlite3";
import { storeFileName } from "../../src/store/sqlite.js";
import { deliveryOf, examplePayload } from "./helpers.js";
import { sqliteStorePerTest } from "./scratch-store.js";

const scratch = sqliteStorePerTest();

// The contract every backend keeps (kv, deliveries, tasks, leases) is test/store/contract.test.ts;
// here only what is SQLite's own: its durability setting and its schema upgrades.
describe("sqlite durability", () => {
  it("keeps recorded deliveries across a reopen with power-loss durability", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await scratch.store.deliveries.record(d);
    scratch.store.close();
    scratch.reopen({ durability: "power" });
    expect((await scratch.store.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
    expect(await scratch.store.deliveries.record(d)).toBe("duplicate");
  });
});

describe("schema upgrade", () => {
  it("opens a version-1 store: its due index is replaced and its queued deliveries are still claimed", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await scratch.store.deliveries.record(d);
    scratch.store.close();
    // Back to version 1's shape: the same tables, one partial index over every unfinished status.
    const old = new Database(join(scratch.dir, storeFileName));
    old.exec(`
      DROP INDEX deliveries_ready;
      DROP INDEX deliveries_leased;
      CREATE INDEX deliveries_due ON deliveries (status, next_run_at) WHERE status IN ('queued', 'failed', 'running');
      PRAGMA user_version = 1;
    `);
    old.close();
    scratch.reopen();
    const check = new Database(join(scratch.dir, storeFileName), { readonly: true });
    const indexes = (check.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").all() as { name: string }[]).map((r) => r.name);
    const version = check.pragma("user_version", { simple: true });
    check.close();
    expect(version).toBe(5);
    expect(indexes).toEqual(expect.arrayContaining(["deliveries_ready", "deliveries_leased", "deliveries_repository", "deliveries_event", "attempts_delivery", "deliveries_dead"]));
    expect(indexes).not.toContain("deliveries_due");
    expect((await scratch.store.deliveries.claimDelivery(60_000))?.delivery).toMatchObject({ id: d.id, payload: d.payload });
  });
});
