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

describe("handler-facing store", () => {
  it("claims a key once until released or expired", async () => {
    expect(await store.claim("rerun:run-1")).toBe(true);
    expect(await store.claim("rerun:run-1")).toBe(false);
    await store.release("rerun:run-1");
    expect(await store.claim("rerun:run-1", { ttlMs: 0 })).toBe(true);
    // ttl 0 expired at once: the next caller wins again
    expect(await store.claim("rerun:run-1")).toBe(true);
    expect(await store.claim("rerun:run-1")).toBe(false);
  });

  it("sets, gets, lists by prefix in key order and hides expired entries", async () => {
    await store.set("state:b", { n: 2 });
    await store.set("state:a", [1, "x"]);
    await store.set("other:a", true);
    await store.set("state:gone", 1, { ttlMs: 0 });
    expect(await store.get("state:b")).toEqual({ n: 2 });
    expect(await store.get("state:gone")).toBeUndefined();
    const listed = await store.list("state:");
    expect(listed.map((e) => [e.key, e.value])).toEqual([
      ["state:a", [1, "x"]],
      ["state:b", { n: 2 }],
    ]);
    await store.delete("state:a");
    expect(await store.get("state:a")).toBeUndefined();
    expect(await store.purgeExpired()).toBe(1);
  });

  it("keeps an audit trail filtered by kind, newest N in order", async () => {
    for (let i = 0; i < 5; i++) await store.audit({ kind: i % 2 ? "secret_write" : "deployment_review", source: "t", details: { i } });
    const reviews = await store.auditLog({ kind: "deployment_review" });
    expect(reviews.map((e) => e.details.i)).toEqual([0, 2, 4]);
    const lastTwo = await store.auditLog({ limit: 2 });
    expect(lastTwo.map((e) => e.details.i)).toEqual([3, 4]);
    expect(lastTwo[0]!.at).toBeInstanceOf(Date);
  });
});

describe("delivery intake", () => {
  it("records once, answers duplicate after, and drops the signature header", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    expect(await store.record(d)).toBe("recorded");
    expect(await store.record(d)).toBe("duplicate");
    const stored = await store.getDelivery(d.id);
    expect(stored?.delivery.status).toBe("queued");
    expect(stored?.delivery.headers["x-github-event"]).toBe("push");
    expect(Object.keys(stored!.delivery.headers).some((h) => h.startsWith("x-hub-signature"))).toBe(false);
    expect(await store.depth()).toBe(1);
    expect(await store.ready()).toBe(true);
  });

  it("group-commits concurrent records, duplicates within a batch included", async () => {
    const payload = examplePayload("workflow_run", "completed");
    const deliveries = Array.from({ length: 50 }, () => deliveryOf("workflow_run", payload));
    const results = await Promise.all([...deliveries, deliveries[7]!].map((d) => store.record(d)));
    expect(results.filter((r) => r === "recorded")).toHaveLength(50);
    expect(results[50]).toBe("duplicate");
    expect(await store.depth()).toBe(50);
  });

  it("keeps recorded deliveries across a reopen", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await store.record(d);
    store.close();
    store = openSqliteStore(dir, { durability: "power" });
    expect((await store.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
    expect(await store.record(d)).toBe("duplicate");
  });

  it("rejects records once closed and reports not ready", async () => {
    store.close();
    await expect(store.record(deliveryOf("push", examplePayload("push")))).rejects.toThrow(/closed/);
    expect(await store.ready()).toBe(false);
    store = openSqliteStore(dir);
  });
});

describe("delivery queue", () => {
  it("takes back an expired lease; the old holder can no longer write", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await store.record(d);
    const first = (await store.claimDelivery(0))!;
    expect(first.delivery).toMatchObject({ id: d.id, status: "running", attempts: 1, payload: d.payload });
    const second = (await store.claimDelivery(60_000))!;
    expect(second.delivery.attempts).toBe(2);
    expect(await store.claimDelivery(60_000)).toBeUndefined();
    expect(await store.recordOutcome(first.token, d.id, "h", { status: "done" }, 0.1)).toBe(false);
    expect(await store.finishDelivery(first.token, d.id, { status: "done" })).toBe(false);
    expect(await store.recordOutcome(second.token, d.id, "h", { status: "done" }, 0.1)).toBe(true);
    expect(await store.finishDelivery(second.token, d.id, { status: "done" })).toBe(true);
    expect((await store.getDelivery(d.id))?.delivery.status).toBe("done");
    expect(await store.pendingWork(new Date())).toBe(0);
  });

  it("purges done deliveries past retention and keeps dead letters", async () => {
    const done = deliveryOf("push", examplePayload("push"));
    const dead = deliveryOf("push", examplePayload("push"));
    await store.record(done);
    await store.record(dead);
    for (let i = 0; i < 2; i++) {
      const c = (await store.claimDelivery(60_000))!;
      await store.recordOutcome(c.token, c.delivery.id, "h", { status: "failed", error: "x" }, 0);
      const decision = c.delivery.id === done.id ? { status: "done" as const } : { status: "dead" as const, lastError: "h: x" };
      await store.finishDelivery(c.token, c.delivery.id, decision);
    }
    expect(await store.purgeFinished(new Date(Date.now() - 60_000))).toBe(0);
    expect(await store.purgeFinished(new Date(Date.now() + 1))).toBe(1);
    expect(await store.getDelivery(done.id)).toBeUndefined();
    expect((await store.getDelivery(dead.id))?.outcomes).toHaveLength(1);
    expect(await store.record(done)).toBe("recorded"); // its id is forgotten with it
  });

  it("claims a batch in one go: expired leases first, then by due time, never more than asked", async () => {
    const made = [0, 1, 2].map((i) => ({ ...deliveryOf("push", examplePayload("push")), receivedAt: new Date(Date.now() - 3000 + i * 1000) }));
    for (const d of made) await store.record(d);
    const stale = (await store.claimDelivery(0))!;
    expect(stale.delivery.id).toBe(made[0]!.id);
    const batch = await store.claimDeliveries(60_000, 2);
    expect(batch.map((c) => [c.delivery.id, c.delivery.attempts])).toEqual([
      [made[0]!.id, 2],
      [made[1]!.id, 1],
    ]);
    expect(new Set(batch.map((c) => c.token)).size).toBe(2);
    expect((await store.claimDeliveries(60_000, 5)).map((c) => c.delivery.id)).toEqual([made[2]!.id]);
    expect(await store.claimDeliveries(60_000, 5)).toEqual([]);
    expect(await store.depth()).toBe(3);
  });

  it("records a delivery leased to the caller: never queued, durable, finished with its token", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    const claim = await store.recordLeased(d, 60_000);
    if (claim === "duplicate") throw new Error("recorded as a duplicate");
    expect(claim.delivery).toMatchObject({ id: d.id, status: "running", attempts: 1, payload: d.payload });
    expect(Object.keys(claim.delivery.headers).some((h) => h.startsWith("x-hub-signature"))).toBe(false);
    expect(claim.outcomes).toEqual([]);
    expect(await store.claimDeliveries(60_000, 5)).toEqual([]);
    expect(await store.recordLeased(d, 60_000)).toBe("duplicate");
    expect(await store.record(d)).toBe("duplicate");
    expect((await store.getDelivery(d.id))?.delivery).toMatchObject({ status: "running", attempts: 1 });
    expect(await store.recordOutcome(claim.token, d.id, "h", { status: "done" }, 0)).toBe(true);
    expect(await store.finishDelivery(claim.token, d.id, { status: "done" })).toBe(true);
    expect((await store.getDelivery(d.id))?.delivery.status).toBe("done");
  });

  it("queues a leased record again when its lease is given back, without using up an attempt", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    const claim = await store.recordLeased(d, 60_000);
    if (claim === "duplicate") throw new Error("recorded as a duplicate");
    await store.releaseLease(claim.token);
    const again = (await store.claimDelivery(60_000))!;
    expect(again.delivery).toMatchObject({ id: d.id, attempts: 1 });
  });
});

describe("schema upgrade", () => {
  it("opens a version-1 store: its due index is replaced and its queued deliveries are still claimed", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    await store.record(d);
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
    expect(version).toBe(4);
    expect(indexes).toEqual(expect.arrayContaining(["deliveries_ready", "deliveries_leased", "deliveries_repository", "deliveries_event", "attempts_delivery", "deliveries_dead"]));
    expect(indexes).not.toContain("deliveries_due");
    expect((await store.claimDelivery(60_000))?.delivery).toMatchObject({ id: d.id, payload: d.payload });
  });
});
