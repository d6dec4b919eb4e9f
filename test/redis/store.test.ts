// The store contract, run over both engines: what the engine relies on must hold for
// SQLite and Redis alike. Redis cases skip (with a printed reason) when no Redis answers.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite.js";
import type { RedisStore } from "../../src/store/redis.js";
import { deliveryOf, examplePayload, tempDir } from "../engine/helpers.js";
import { redisStores, redisUp } from "./support.js";

type AnyStore = SqliteStore | RedisStore;
interface Backend {
  open(): Promise<AnyStore>;
  dispose(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const { dir, cleanup } = await tempDir();
  const opened: SqliteStore[] = [];
  return {
    async open() {
      const s = openSqliteStore(dir);
      opened.push(s);
      return s;
    },
    async dispose() {
      for (const s of opened) s.close();
      await cleanup();
    },
  };
}

async function redisBackend(): Promise<Backend> {
  return redisStores();
}

function contract(makeBackend: () => Promise<Backend>) {
  let backend: Backend;
  let store: AnyStore;
  beforeEach(async () => {
    backend = await makeBackend();
    store = await backend.open();
  });
  afterEach(async () => backend.dispose());

  describe("handler-facing store", () => {
    it("claims a key once until released or expired", async () => {
      expect(await store.claim("rerun:run-1")).toBe(true);
      expect(await store.claim("rerun:run-1")).toBe(false);
      await store.release("rerun:run-1");
      expect(await store.claim("rerun:run-1", { ttlMs: 0 })).toBe(true);
      expect(await store.claim("rerun:run-1")).toBe(true);
      expect(await store.claim("rerun:run-1")).toBe(false);
      expect(await store.claim("short", { ttlMs: 40, value: { by: "a" } })).toBe(true);
      expect(await store.get("short")).toEqual({ by: "a" });
      await new Promise((r) => setTimeout(r, 80));
      expect(await store.claim("short", { ttlMs: 40 })).toBe(true);
    });

    it("sets, gets, lists by prefix in key order and hides expired entries", async () => {
      await store.set("state:b", { n: 2 });
      await store.set("state:a", [1, "x"]);
      await store.set("state:é", "accented sorts after ascii");
      await store.set("other:a", true);
      await store.set("state:gone", 1, { ttlMs: 0 });
      await store.set("state:soon", 1, { ttlMs: 30 });
      expect(await store.get("state:b")).toEqual({ n: 2 });
      expect(await store.get("state:gone")).toBeUndefined();
      await new Promise((r) => setTimeout(r, 60));
      const listed = await store.list("state:");
      expect(listed.map((e) => [e.key, e.value])).toEqual([
        ["state:a", [1, "x"]],
        ["state:b", { n: 2 }],
        ["state:é", "accented sorts after ascii"],
      ]);
      expect(listed[0]!.updatedAt).toBeInstanceOf(Date);
      await store.delete("state:a");
      expect(await store.get("state:a")).toBeUndefined();
      expect(await store.purgeExpired()).toBeGreaterThanOrEqual(1);
      expect((await store.list("")).map((e) => e.key)).toEqual(["other:a", "state:b", "state:é"]);
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

  describe("delivery intake and queue", () => {
    it("records once, answers duplicate after, and drops the signature header", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      expect(await store.record(d)).toBe("recorded");
      expect(await store.record(d)).toBe("duplicate");
      const stored = await store.getDelivery(d.id);
      expect(stored?.delivery).toMatchObject({ id: d.id, event: "push", status: "queued", attempts: 0, payload: d.payload });
      expect(stored?.delivery.headers["x-github-event"]).toBe("push");
      expect(Object.keys(stored!.delivery.headers).some((h) => h.startsWith("x-hub-signature"))).toBe(false);
      expect(await store.depth()).toBe(1);
      expect(await store.ready()).toBe(true);
    });

    it("dedups concurrent records of the same ids", async () => {
      const payload = examplePayload("workflow_run", "completed");
      const deliveries = Array.from({ length: 50 }, () => deliveryOf("workflow_run", payload));
      const results = await Promise.all([...deliveries, deliveries[7]!, deliveries[7]!].map((d) => store.record(d)));
      expect(results.filter((r) => r === "recorded")).toHaveLength(50);
      expect(results.slice(50)).toEqual(["duplicate", "duplicate"]);
      expect(await store.depth()).toBe(50);
    });

    it("keeps recorded deliveries across a reopen (another replica sees them)", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.record(d);
      const other = await backend.open();
      expect((await other.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
      expect(await other.record(d)).toBe("duplicate");
    });

    it("rejects records once closed and reports not ready", async () => {
      await store.close();
      await expect(store.record(deliveryOf("push", examplePayload("push")))).rejects.toThrow(/closed/);
      expect(await store.ready()).toBe(false);
    });

    it("takes back an expired lease; the old holder can no longer write", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.record(d);
      const first = (await store.claimDelivery(0))!;
      expect(first.delivery).toMatchObject({ id: d.id, status: "running", attempts: 1, payload: d.payload });
      const second = (await store.claimDelivery(60_000))!;
      expect(second.delivery.attempts).toBe(2);
      expect(await store.claimDelivery(60_000)).toBeUndefined();
      expect(await store.renewLease(first.token, 60_000)).toBe(false);
      expect(await store.recordOutcome(first.token, d.id, "h", { status: "done" }, 0.1)).toBe(false);
      expect(await store.finishDelivery(first.token, d.id, { status: "done" })).toBe(false);
      expect(await store.renewLease(second.token, 60_000)).toBe(true);
      expect(await store.recordOutcome(second.token, d.id, "h", { status: "done", summary: "ok" }, 0.1)).toBe(true);
      expect(await store.finishDelivery(second.token, d.id, { status: "done" })).toBe(true);
      const shown = await store.getDelivery(d.id);
      expect(shown?.delivery.status).toBe("done");
      expect(shown?.outcomes).toMatchObject([{ handler: "h", status: "done", detail: "ok", attempts: 1, retryable: true }]);
      expect(await store.pendingWork(new Date())).toBe(0);
    });

    it("retries a failed delivery at its time, counts handler attempts, and replays a dead one", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.record(d);
      const c1 = (await store.claimDelivery(60_000))!;
      await store.recordOutcome(c1.token, d.id, "a", { status: "failed", error: "boom" }, 0);
      await store.recordOutcome(c1.token, d.id, "b", { status: "skipped", reason: "n/a" }, 0);
      const retryAt = new Date(Date.now() + 60_000);
      expect(await store.finishDelivery(c1.token, d.id, { status: "failed", retryAt, lastError: "a: boom" })).toBe(true);
      expect(await store.claimDelivery(60_000)).toBeUndefined();
      expect((await store.nextDueAt())?.getTime()).toBe(retryAt.getTime());
      expect(await store.depth()).toBe(1);
      expect((await store.listDeliveries({ status: "failed" })).map((x) => x.lastError)).toEqual(["a: boom"]);

      // Redelivered while waiting: replay queues it now with outcomes cleared.
      expect(await store.replayDelivery(d.id)).toBe(true);
      const c2 = (await store.claimDelivery(60_000))!;
      expect(c2.delivery).toMatchObject({ id: d.id, attempts: 1, lastError: undefined });
      expect(c2.outcomes).toEqual([]);
      expect(await store.replayDelivery(d.id)).toBe(false); // running
      await store.recordOutcome(c2.token, d.id, "a", { status: "failed", error: "still", retryable: false }, 0);
      await store.recordOutcome(c2.token, d.id, "a", { status: "failed", error: "again", retryable: false }, 0);
      await store.finishDelivery(c2.token, d.id, { status: "dead", lastError: "a: again" });
      const dead = await store.getDelivery(d.id);
      expect(dead?.delivery).toMatchObject({ status: "dead", lastError: "a: again" });
      expect(dead?.outcomes).toMatchObject([{ handler: "a", status: "failed", detail: "again", retryable: false, attempts: 2 }]);
      expect(await store.replayDelivery("no-such-id")).toBe(false);
    });

    it("lists newest first with filters and limit", async () => {
      const base = Date.now();
      const made = [0, 1, 2, 3].map((i) => ({
        ...deliveryOf(i % 2 ? "push" : "workflow_run", examplePayload(i % 2 ? "push" : "workflow_run", i % 2 ? undefined : "completed")),
        receivedAt: new Date(base + i * 1000),
      }));
      for (const d of made) await store.record(d);
      expect((await store.listDeliveries()).map((d) => d.id)).toEqual([made[3]!.id, made[2]!.id, made[1]!.id, made[0]!.id]);
      expect((await store.listDeliveries({ event: "push" })).map((d) => d.id)).toEqual([made[3]!.id, made[1]!.id]);
      expect((await store.listDeliveries({ limit: 1 })).map((d) => d.id)).toEqual([made[3]!.id]);
      expect(await store.listDeliveries({ status: "done" })).toEqual([]);
    });

    it("gives released work back without using up an attempt", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.record(d);
      const c = (await store.claimDelivery(60_000))!;
      await store.releaseLease(c.token);
      expect(await store.finishDelivery(c.token, d.id, { status: "done" })).toBe(false);
      const again = (await store.claimDelivery(60_000))!;
      expect(again.delivery.attempts).toBe(1);
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
  });

  describe("scheduled tasks", () => {
    it("dedups by key unless replace, and a re-schedule during a run is a new generation", async () => {
      const later = new Date(Date.now() + 60_000);
      await store.scheduleTask("h", { key: "k", runAt: later, data: "first", installationId: 7 });
      await store.scheduleTask("h", { key: "k", runAt: new Date(), data: "second" });
      expect((await store.listTasks()).map((t) => [t.data, t.installationId])).toEqual([["first", 7]]);
      expect(await store.claimTask(60_000)).toBeUndefined();
      await store.scheduleTask("h", { key: "k", runAt: new Date(), data: "third", replace: true });
      const run = (await store.claimTask(60_000))!;
      expect(run.task).toMatchObject({ handler: "h", key: "k", data: "third", status: "running", attempts: 0 });
      // The task schedules its next run while running: finishing this run must not delete it.
      await store.scheduleTask("h", { key: "k", runAt: later, data: "next" });
      await store.finishTask(run, { status: "done" });
      expect((await store.listTasks()).map((t) => [t.key, t.data, t.status])).toEqual([["k", "next", "pending"]]);
      await store.cancelTask("h", "k");
      expect(await store.listTasks()).toEqual([]);
    });

    it("retries, parks dead with the last error, and takes back an expired task lease", async () => {
      await store.scheduleTask("h", { key: "a:b", runAt: new Date(), data: { n: 1 } });
      await store.scheduleTask("h:a", { key: "b", runAt: new Date(Date.now() + 60_000), data: null });
      const first = (await store.claimTask(0))!;
      const taken = (await store.claimTask(60_000))!;
      expect(taken.task.key).toBe("a:b");
      await store.finishTask(first, { status: "done" }); // lost its lease: no effect
      expect(await store.listTasks()).toHaveLength(2);
      await store.finishTask(taken, { status: "retry", retryAt: new Date(), lastError: "once" });
      const again = (await store.claimTask(60_000))!;
      expect(again.task).toMatchObject({ key: "a:b", attempts: 1, lastError: "once" });
      await store.finishTask(again, { status: "dead", lastError: "twice" });
      const tasks = await store.listTasks();
      expect(tasks.map((t) => [t.handler, t.key, t.status, t.attempts, t.lastError])).toEqual([
        ["h", "a:b", "dead", 2, "twice"],
        ["h:a", "b", "pending", 0, undefined],
      ]);
      expect(await store.pendingWork(new Date())).toBe(0);
      expect(await store.pendingWork(new Date(Date.now() + 120_000))).toBe(1);
    });
  });
}

describe("sqlite store", () => contract(sqliteBackend));
describe.skipIf(!redisUp)("redis store", () => contract(redisBackend));
