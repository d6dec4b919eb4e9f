import { describe, expect, it } from "vitest";
import { join } from "node:path";
import Database from "better-sqlite3";
import { storeFileName } from "../../src/store/sqlite/store.js";
import { keptHeaders } from "../../src/store/recorded.js";
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

/** The store file's schema version and index names (and the plan of `plan`), read on a connection of its own. */
function schemaOf(path: string, plan?: string): { version: number; indexes: string[]; plan: string } {
  const check = new Database(path, { readonly: true });
  try {
    const indexes = (check.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").all() as { name: string }[]).map((r) => r.name);
    const version = check.pragma("user_version", { simple: true }) as number;
    const steps = plan ? (check.prepare(`EXPLAIN QUERY PLAN ${plan}`).all() as { detail: string }[]).map((r) => r.detail).join(" ") : "";
    return { version, indexes, plan: steps };
  } finally {
    check.close();
  }
}

/** Runs `sql` on the closed scratch store's file, on a connection of its own: an older version's shape. */
function rewrite(sql: string): void {
  const db = new Database(join(scratch.dir, storeFileName));
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

describe("schema upgrade", () => {
  it("opens a version-1 store: its due index is replaced and its queued deliveries are still claimed", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await scratch.store.deliveries.record(d);
    scratch.store.close();
    // Back to version 1's shape: the same tables, one partial index over every unfinished status.
    rewrite(`
      DROP INDEX deliveries_ready;
      DROP INDEX deliveries_leased;
      CREATE INDEX deliveries_due ON deliveries (status, next_run_at) WHERE status IN ('queued', 'failed', 'running');
      PRAGMA user_version = 1;
    `);
    scratch.reopen();
    const { version, indexes } = schemaOf(join(scratch.dir, storeFileName));
    expect(version).toBe(13);
    expect(indexes).toEqual(expect.arrayContaining(["kv_expires", "deliveries_ready", "deliveries_leased", "deliveries_repository", "deliveries_event", "attempts_delivery", "deliveries_dead"]));
    expect(indexes).not.toContain("deliveries_due");
    expect((await scratch.store.deliveries.claimDelivery(60_000))?.delivery).toMatchObject({ id: d.id, payload: d.payload });
  });

  it("opens a version-5 store: the console's per-minute and dead-letter counts are made from the deliveries it holds, then kept", async () => {
    const minute = 60_000;
    const base = Math.floor(Date.now() / minute) * minute - 10 * minute;
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const d = { ...deliveryOf("push", examplePayload("push")), repository: i % 3 === 0 ? "acme/web" : "acme/api", receivedAt: new Date(base + (i % 5) * minute + i) };
      ids.push(d.id);
      await scratch.store.deliveries.record(d);
    }
    // Six dead letters (two of acme/web), the rest done.
    for (;;) {
      const claimed = await scratch.store.deliveries.claimDelivery(60_000);
      if (!claimed) break;
      const dead = ids.indexOf(claimed.delivery.id) % 5 === 0;
      await scratch.store.deliveries.finishDelivery(claimed.token, claimed.delivery.id, dead ? { status: "dead", lastError: "boom" } : { status: "done" });
    }
    const before = { activity: await scratch.store.browse.deliveryActivity(base), dead: await scratch.store.browse.countDead(), deadWeb: await scratch.store.browse.countDead(["acme/web"]) };
    scratch.store.close();
    // Back to version 5's shape: no count tables, no triggers.
    rewrite(`
      DROP TRIGGER deliveries_count_insert; DROP TRIGGER deliveries_count_status; DROP TRIGGER deliveries_count_delete;
      DROP TRIGGER deliveries_dead_insert; DROP TRIGGER deliveries_dead_status; DROP TRIGGER deliveries_dead_delete;
      DROP TABLE delivery_minutes; DROP TABLE dead_letters;
      PRAGMA user_version = 5;
    `);
    scratch.reopen();
    expect(await scratch.store.browse.deliveryActivity(base)).toEqual(before.activity);
    expect(before.activity.reduce((n, r) => n + r.count, 0)).toBe(30);
    expect(before.activity.filter((r) => r.status === "dead").reduce((n, r) => n + r.count, 0)).toBe(6);
    expect(await scratch.store.browse.countDead()).toBe(6);
    expect(before).toMatchObject({ dead: 6, deadWeb: 2 });
    expect(await scratch.store.browse.countDead(["acme/web"])).toBe(2);
    // Kept from then on: a new delivery, a replayed dead letter and a purge all show.
    await scratch.store.deliveries.record({ ...deliveryOf("push", examplePayload("push")), repository: "acme/web", receivedAt: new Date(base) });
    expect(await scratch.store.deliveries.replayDelivery(ids[0]!)).toBe(true);
    expect(await scratch.store.browse.countDead()).toBe(5);
    expect(await scratch.store.browse.countDead(["acme/web"])).toBe(1);
    const queued = (await scratch.store.browse.deliveryActivity(base)).filter((r) => r.status === "queued").reduce((n, r) => n + r.count, 0);
    expect(queued).toBe(2);
    // The 24 done deliveries purged: their counts go, and so do the minutes left empty.
    expect(await scratch.store.deliveries.purgeFinished(new Date(Date.now() + 60_000))).toBe(24);
    const left = await scratch.store.browse.deliveryActivity(base);
    expect(left.filter((r) => r.status === "done")).toEqual([]);
    expect(left.reduce((n, r) => n + r.count, 0)).toBe(7);
    const check = new Database(join(scratch.dir, storeFileName), { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(13);
    expect(check.prepare("SELECT count(*) FROM delivery_minutes WHERE count = 0").pluck().get()).toBe(0);
    check.close();
  });

  it("opens a version-6 store in place: the lease-token index goes, and a delivery leased under it is renewed, released and finished", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await scratch.store.deliveries.record(d);
    const claim = (await scratch.store.deliveries.claimDelivery(60_000))!;
    scratch.store.close();
    // Version 6's shape: the lease-token index beside the others, a delivery running under a lease.
    rewrite(`
      CREATE INDEX deliveries_lease ON deliveries (lease_token) WHERE lease_token IS NOT NULL;
      PRAGMA user_version = 6;
    `);
    scratch.reopen();
    const { version, indexes, plan } = schemaOf(join(scratch.dir, storeFileName), "UPDATE deliveries SET lease_until = 1 WHERE status = 'running' AND lease_token = 'x'");
    expect(version).toBe(13);
    expect(indexes).not.toContain("deliveries_lease");
    expect(indexes).toContain("deliveries_leased");
    // The renewal reads the running rows' index, not the whole table.
    expect(plan).toContain("deliveries_leased");
    expect(await scratch.store.leases.renewLease(claim.token, 60_000)).toBe(true);
    await scratch.store.leases.releaseLease(claim.token);
    const again = (await scratch.store.deliveries.claimDelivery(60_000))!;
    expect(again.delivery.id).toBe(d.id);
    expect(await scratch.store.deliveries.finishDelivery(again.token, d.id, { status: "done" })).toBe(true);
    expect((await scratch.store.deliveries.getDelivery(d.id))?.delivery.status).toBe("done");
  });

  it("opens a version-8 store: payloads it kept inline are still claimed and shown; new ones go to the payload log", async () => {
    const old = deliveryOf("push", examplePayload("push"));
    scratch.store.close();
    scratch.reopen({ payloadLog: false });
    await scratch.store.deliveries.record(old);
    scratch.store.close();
    // Version 8's shape: bodies without the payload log's columns.
    rewrite(`
      ALTER TABLE delivery_bodies DROP COLUMN payload_file;
      ALTER TABLE delivery_bodies DROP COLUMN payload_offset;
      ALTER TABLE delivery_bodies DROP COLUMN payload_length;
      PRAGMA user_version = 8;
    `);
    scratch.reopen();
    expect(schemaOf(join(scratch.dir, storeFileName)).version).toBe(13);
    const fresh = deliveryOf("workflow_run", examplePayload("workflow_run"));
    await scratch.store.deliveries.record(fresh);
    expect((await scratch.store.deliveries.getDelivery(old.id))?.delivery.payload).toBe(old.payload);
    const claimed = [(await scratch.store.deliveries.claimDelivery(60_000))!, (await scratch.store.deliveries.claimDelivery(60_000))!];
    expect(Object.fromEntries(claimed.map((c) => [c.delivery.id, c.delivery.payload]))).toEqual({ [old.id]: old.payload, [fresh.id]: fresh.payload });
    const check = new Database(join(scratch.dir, storeFileName), { readonly: true });
    const inline = check.prepare("SELECT id, payload_file IS NOT NULL AS logged FROM delivery_bodies").all();
    const inRow = check.prepare("SELECT id FROM deliveries WHERE payload_file IS NOT NULL").all();
    check.close();
    expect(inline).toEqual([{ id: old.id, logged: 0 }]);
    expect(inRow).toEqual([{ id: fresh.id }]);
  });

  it("opens a version-9 store: bodies it kept in their own rows are claimed, shown and listed; new ones go in the queue row", async () => {
    const old = deliveryOf("push", examplePayload("push"));
    await scratch.store.deliveries.record(old);
    scratch.store.close();
    // Version 9's shape: the body (headers, the payload's place in the log) in delivery_bodies.
    rewrite(`
      INSERT INTO delivery_bodies (id, headers, payload, payload_file, payload_offset, payload_length)
        SELECT id, headers, '', payload_file, payload_offset, payload_length FROM deliveries;
      ALTER TABLE deliveries DROP COLUMN headers;
      ALTER TABLE deliveries DROP COLUMN payload_file;
      ALTER TABLE deliveries DROP COLUMN payload_offset;
      ALTER TABLE deliveries DROP COLUMN payload_length;
      PRAGMA user_version = 9;
    `);
    scratch.reopen();
    expect(schemaOf(join(scratch.dir, storeFileName)).version).toBe(13);
    const fresh = deliveryOf("workflow_run", examplePayload("workflow_run"));
    await scratch.store.deliveries.record(fresh);
    const shown = (await scratch.store.deliveries.getDelivery(old.id))!.delivery;
    expect([shown.payload, shown.headers]).toEqual([old.payload, keptHeaders(old.headers)]);
    const listed = await scratch.store.deliveries.listDeliveries();
    expect(Object.fromEntries(listed.map((d) => [d.id, d.payload]))).toEqual({ [old.id]: old.payload, [fresh.id]: fresh.payload });
    const claimed = [(await scratch.store.deliveries.claimDelivery(60_000))!, (await scratch.store.deliveries.claimDelivery(60_000))!];
    expect(Object.fromEntries(claimed.map((c) => [c.delivery.id, [c.delivery.payload, c.delivery.headers]]))).toEqual({
      [old.id]: [old.payload, keptHeaders(old.headers)],
      [fresh.id]: [fresh.payload, keptHeaders(fresh.headers)],
    });
    const check = new Database(join(scratch.dir, storeFileName), { readonly: true });
    const inBodies = check.prepare("SELECT id FROM delivery_bodies").all();
    const inRow = check.prepare("SELECT id FROM deliveries WHERE headers IS NOT NULL").all();
    check.close();
    expect([inBodies, inRow]).toEqual([[{ id: old.id }], [{ id: fresh.id }]]);
  });

  it("opens a version-11 store: runs it logged as they were written are shown once, and later runs are logged as they are replaced", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await scratch.store.deliveries.record(d);
    const first = (await scratch.store.deliveries.claimDelivery(60_000))!;
    await scratch.store.deliveries.recordOutcome(first.token, d.id, "a", { status: "failed", error: "boom" }, 0);
    await scratch.store.deliveries.finishDelivery(first.token, d.id, { status: "failed", retryAt: new Date(Date.now() - 1), lastError: "a: boom" });
    scratch.store.close();
    // Version 11 logged every run, the latest too, as it was written; outcomes had no `logged`.
    rewrite(`
      INSERT INTO attempts (delivery_id, handler, attempt, status, detail, at)
        SELECT delivery_id, handler, attempts, status, detail, updated_at FROM outcomes;
      ALTER TABLE outcomes DROP COLUMN logged;
      PRAGMA user_version = 11;
    `);
    scratch.reopen();
    expect(schemaOf(join(scratch.dir, storeFileName)).version).toBe(13);
    const runs = async () => (await scratch.store.deliveries.getDelivery(d.id))!.attempts.map((a) => `${a.handler}#${a.attempt}:${a.detail}`);
    expect(await runs()).toEqual(["a#1:boom"]);
    const second = (await scratch.store.deliveries.claimDelivery(60_000))!;
    await new Promise((resolve) => setTimeout(resolve, 3));
    await scratch.store.deliveries.recordOutcome(second.token, d.id, "a", { status: "failed", error: "again" }, 0);
    await new Promise((resolve) => setTimeout(resolve, 3));
    await scratch.store.deliveries.recordOutcome(second.token, d.id, "a", { status: "done", summary: "ok" }, 0);
    expect(await runs()).toEqual(["a#1:boom", "a#2:again", "a#3:ok"]);
    // The run before version 12 and the replaced one are rows; the latest is its outcome alone.
    const check = new Database(join(scratch.dir, storeFileName), { readonly: true });
    const logged = check.prepare("SELECT attempt FROM attempts WHERE delivery_id = ? ORDER BY seq").pluck().all(d.id);
    check.close();
    expect(logged).toEqual([1, 2]);
  });
});

