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
    expect(version).toBe(6);
    expect(indexes).toEqual(expect.arrayContaining(["deliveries_ready", "deliveries_leased", "deliveries_repository", "deliveries_event", "attempts_delivery", "deliveries_dead"]));
    expect(indexes).not.toContain("deliveries_due");
    expect((await store.deliveries.claimDelivery(60_000))?.delivery).toMatchObject({ id: d.id, payload: d.payload });
  });

  it("opens a version-5 store: the console's per-minute and dead-letter counts are made from the deliveries it holds, then kept", async () => {
    const minute = 60_000;
    const base = Math.floor(Date.now() / minute) * minute - 10 * minute;
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const d = { ...deliveryOf("push", examplePayload("push")), repository: i % 3 === 0 ? "acme/web" : "acme/api", receivedAt: new Date(base + (i % 5) * minute + i) };
      ids.push(d.id);
      await store.deliveries.record(d);
    }
    // Six dead letters (two of acme/web), the rest done.
    for (;;) {
      const claimed = await store.deliveries.claimDelivery(60_000);
      if (!claimed) break;
      const dead = ids.indexOf(claimed.delivery.id) % 5 === 0;
      await store.deliveries.finishDelivery(claimed.token, claimed.delivery.id, dead ? { status: "dead", lastError: "boom" } : { status: "done" });
    }
    const before = { activity: await store.browse.deliveryActivity(base), dead: await store.browse.countDead(), deadWeb: await store.browse.countDead(["acme/web"]) };
    store.close();
    // Back to version 5's shape: no count tables, no triggers.
    const old = new Database(join(dir, storeFileName));
    old.exec(`
      DROP TRIGGER deliveries_count_insert; DROP TRIGGER deliveries_count_status; DROP TRIGGER deliveries_count_delete;
      DROP TRIGGER deliveries_dead_insert; DROP TRIGGER deliveries_dead_status; DROP TRIGGER deliveries_dead_delete;
      DROP TABLE delivery_minutes; DROP TABLE dead_letters;
      PRAGMA user_version = 5;
    `);
    old.close();
    store = openSqliteStore(dir);
    expect(await store.browse.deliveryActivity(base)).toEqual(before.activity);
    expect(before.activity.reduce((n, r) => n + r.count, 0)).toBe(30);
    expect(before.activity.filter((r) => r.status === "dead").reduce((n, r) => n + r.count, 0)).toBe(6);
    expect(await store.browse.countDead()).toBe(6);
    expect(before).toMatchObject({ dead: 6, deadWeb: 2 });
    expect(await store.browse.countDead(["acme/web"])).toBe(2);
    // Kept from then on: a new delivery, a replayed dead letter and a purge all show.
    await store.deliveries.record({ ...deliveryOf("push", examplePayload("push")), repository: "acme/web", receivedAt: new Date(base) });
    expect(await store.deliveries.replayDelivery(ids[0]!)).toBe(true);
    expect(await store.browse.countDead()).toBe(5);
    expect(await store.browse.countDead(["acme/web"])).toBe(1);
    const queued = (await store.browse.deliveryActivity(base)).filter((r) => r.status === "queued").reduce((n, r) => n + r.count, 0);
    expect(queued).toBe(2);
    // The 24 done deliveries purged: their counts go, and so do the minutes left empty.
    expect(await store.deliveries.purgeFinished(new Date(Date.now() + 60_000))).toBe(24);
    const left = await store.browse.deliveryActivity(base);
    expect(left.filter((r) => r.status === "done")).toEqual([]);
    expect(left.reduce((n, r) => n + r.count, 0)).toBe(7);
    const check = new Database(join(dir, storeFileName), { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(6);
    expect(check.prepare("SELECT count(*) FROM delivery_minutes WHERE count = 0").pluck().get()).toBe(0);
    check.close();
  });
});

