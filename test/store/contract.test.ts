// The store contract (src/store/contract.ts), one suite over every backend: every part the
// engine, the intake, the console and handlers rely on must hold for SQLite, Redis and
// PostgreSQL alike, and for Redis Cluster (three primaries started here from the machine's
// redis-server), Valkey (one valkey-server started here) and Valkey Cluster (three primaries). Redis and PostgreSQL cases skip (with a printed reason) when no server answers.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { defineHandler, type Outcome } from "../../src/handler.js";
import type { Store } from "../../src/store/types.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/store.js";
import type { RedisStore } from "../../src/store/redis/store.js";
import { deliveryOf, examplePayload, tempDir, testEngine } from "../engine/helpers.js";
import { redisStores, redisUp } from "../redis/support.js";
import { clusterAvailable, startRedisCluster, type TestCluster } from "../redis/cluster-support.js";
import { startValkey, valkeyAvailable, type TestValkey } from "../redis/valkey-support.js";
import type { PostgresStore } from "../../src/store/postgres/store.js";
import { postgresStores, postgresUp } from "../postgres/support.js";

type AnyStore = SqliteStore | RedisStore | PostgresStore;
interface Backend {
  open(opts?: { auditCap?: number }): Promise<AnyStore>;
  dispose(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const { dir, cleanup } = await tempDir();
  const opened: SqliteStore[] = [];
  return {
    async open(opts = {}) {
      const s = openSqliteStore(dir, opts);
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

/**
 * `write(0)` .. `write(count - 1)`, a hundred at a time: the purge tests need more rows than a
 * purge batch holds, and one round trip per row made their setup most of the contract's time.
 */
async function inChunks(count: number, write: (i: number) => Promise<unknown>): Promise<void> {
  for (let from = 0; from < count; from += 100) {
    await Promise.all(Array.from({ length: Math.min(100, count - from) }, (_, k) => write(from + k)));
  }
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
      expect(await store.kv.claim("rerun:run-1")).toBe(true);
      expect(await store.kv.claim("rerun:run-1")).toBe(false);
      await store.kv.release("rerun:run-1");
      expect(await store.kv.claim("rerun:run-1", { ttlMs: 0 })).toBe(true);
      expect(await store.kv.claim("rerun:run-1")).toBe(true);
      expect(await store.kv.claim("rerun:run-1")).toBe(false);
      // The claim's value is read back from a lease that cannot lapse meanwhile (40 ms can pass
      // between two awaits on a loaded machine); the short one is only read once it lapsed.
      expect(await store.kv.claim("held", { ttlMs: 60_000, value: { by: "a" } })).toBe(true);
      expect(await store.kv.get("held")).toEqual({ by: "a" });
      expect(await store.kv.claim("short", { ttlMs: 40, value: { by: "a" } })).toBe(true);
      await new Promise((r) => setTimeout(r, 80));
      expect(await store.kv.claim("short", { ttlMs: 40 })).toBe(true);
    });

    it("sets, gets, lists by prefix in key order and hides expired entries", async () => {
      await store.kv.set("state:b", { n: 2 });
      await store.kv.set("state:a", [1, "x"]);
      await store.kv.set("state:é", "accented sorts after ascii");
      await store.kv.set("other:a", true);
      await store.kv.set("state:gone", 1, { ttlMs: 0 });
      await store.kv.set("state:soon", 1, { ttlMs: 30 });
      expect(await store.kv.get("state:b")).toEqual({ n: 2 });
      expect(await store.kv.get("state:gone")).toBeUndefined();
      await new Promise((r) => setTimeout(r, 60));
      const listed = await store.kv.list("state:");
      expect(listed.map((e) => [e.key, e.value])).toEqual([
        ["state:a", [1, "x"]],
        ["state:b", { n: 2 }],
        ["state:é", "accented sorts after ascii"],
      ]);
      expect(listed[0]!.updatedAt).toBeInstanceOf(Date);
      await store.kv.delete("state:a");
      expect(await store.kv.get("state:a")).toBeUndefined();
      expect(await store.kv.purgeExpired()).toBeGreaterThanOrEqual(1);
      expect((await store.kv.list("")).map((e) => e.key)).toEqual(["other:a", "state:b", "state:é"]);
    });

    it("lists a prefix's keys whatever characters follow it, and none of the keys beside it", async () => {
      const inside = ["p:x", "p:", "p:\u{10FFFF}last", "p:\uFFFF", "p:日本", "p:~"];
      const beside = ["p", "p;", "o:z", "p\u{10FFFF}", "q:", "P:x"];
      for (const key of [...inside, ...beside]) await store.kv.set(key, key);
      const listed = await store.kv.list<string>("p:");
      expect(listed.map((e) => e.key).sort()).toEqual([...inside].sort());
      expect(listed.every((e) => e.value === e.key)).toBe(true);
      expect((await store.kv.list("p:\u{10FFFF}")).map((e) => e.key)).toEqual(["p:\u{10FFFF}last"]);
    });

    it("purges more expired entries than one batch holds, letting other work run between batches", async () => {
      const count = 2_300;
      await inChunks(count, (i) => store.kv.set(`short:${String(i).padStart(5, "0")}`, { i }, { ttlMs: 1 }));
      await store.kv.set("long", { kept: true }, { ttlMs: 3_600_000 });
      await new Promise((r) => setTimeout(r, 20));
      let settled = false;
      let ranDuring = false;
      const purge = store.kv.purgeExpired().finally(() => (settled = true));
      setImmediate(() => (ranDuring = !settled));
      expect(await purge).toBe(count);
      expect(ranDuring).toBe(true);
      expect(await store.kv.list("short:")).toEqual([]);
      expect(await store.kv.get("long")).toEqual({ kept: true });
    }, 60_000);

    it("keeps an audit trail filtered by kind, newest N in order", async () => {
      for (let i = 0; i < 5; i++)
        await store.kv.audit({ kind: i % 2 ? "secret_write" : "deployment_review", source: "t", details: { i } });
      const reviews = await store.kv.auditLog({ kind: "deployment_review" });
      expect(reviews.map((e) => e.details.i)).toEqual([0, 2, 4]);
      const lastTwo = await store.kv.auditLog({ limit: 2 });
      expect(lastTwo.map((e) => e.details.i)).toEqual([3, 4]);
      expect(lastTwo[0]!.at).toBeInstanceOf(Date);
    });

    it("bounds the audit trail: the newest entries stay, in order, and the oldest go", async () => {
      const capped = await backend.open({ auditCap: 100 });
      for (let i = 0; i < 450; i++) await capped.kv.audit({ kind: "secret_write", source: "t", details: { i } });
      await capped.kv.purgeExpired();
      const kept = (await capped.kv.auditLog()).map((e) => e.details.i as number);
      // SQLite keeps exactly the cap; Redis's stream trims whole nodes (100 entries by default), so it may keep up to a node more.
      expect(kept.length).toBeGreaterThanOrEqual(100);
      expect(kept.length).toBeLessThanOrEqual(200);
      expect(kept).toEqual(Array.from({ length: kept.length }, (_, k) => 450 - kept.length + k));
      if ("path" in capped) expect(kept).toHaveLength(100);
    });
  });

  describe("delivery intake and queue", () => {
    it("records once, answers duplicate after, and drops the signature header", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      expect(await store.deliveries.record(d)).toBe("recorded");
      expect(await store.deliveries.record(d)).toBe("duplicate");
      const stored = await store.deliveries.getDelivery(d.id);
      expect(stored?.delivery).toMatchObject({
        id: d.id,
        event: "push",
        status: "queued",
        attempts: 0,
        payload: d.payload,
      });
      expect(stored?.delivery.headers["x-github-event"]).toBe("push");
      expect(Object.keys(stored!.delivery.headers).some((h) => h.startsWith("x-hub-signature"))).toBe(false);
      expect(await store.deliveries.depth()).toBe(1);
      expect(await store.ready()).toBe(true);
    });

    it("dedups concurrent records of the same ids", async () => {
      const payload = examplePayload("workflow_run", "completed");
      const deliveries = Array.from({ length: 50 }, () => deliveryOf("workflow_run", payload));
      const results = await Promise.all(
        [...deliveries, deliveries[7]!, deliveries[7]!].map((d) => store.deliveries.record(d)),
      );
      expect(results.filter((r) => r === "recorded")).toHaveLength(50);
      expect(results.slice(50)).toEqual(["duplicate", "duplicate"]);
      expect(await store.deliveries.depth()).toBe(50);
    });

    it("keeps recorded deliveries across a reopen (another replica sees them)", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(d);
      const other = await backend.open();
      expect((await other.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
      expect(await other.deliveries.record(d)).toBe("duplicate");
    });

    it("rejects records once closed and reports not ready", async () => {
      await store.close();
      await expect(store.deliveries.record(deliveryOf("push", examplePayload("push")))).rejects.toThrow(/closed/);
      expect(await store.ready()).toBe(false);
      expect(await store.canRecord(4096)).toBe(false);
    });

    it("probes recording (readiness) without leaving anything a reader sees", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      expect(await store.deliveries.record(d)).toBe("recorded");
      expect(await store.canRecord(64 * 1024)).toBe(true);
      expect(await store.canRecord(0)).toBe(true);
      expect((await store.deliveries.listDeliveries({ limit: 10 })).map((r) => r.id)).toEqual([d.id]);
      expect(await store.kv.list("")).toEqual([]);
    });

    it("takes back an expired lease; the old holder can no longer write", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(d);
      const first = (await store.deliveries.claimDelivery(0))!;
      expect(first.delivery).toMatchObject({ id: d.id, status: "running", attempts: 1, payload: d.payload });
      const second = (await store.deliveries.claimDelivery(60_000))!;
      expect(second.delivery.attempts).toBe(2);
      expect(await store.deliveries.claimDelivery(60_000)).toBeUndefined();
      expect(await store.leases.renewLease(first.token, 60_000)).toBe(false);
      expect(await store.deliveries.recordOutcome(first.token, d.id, "h", { status: "done" }, 0.1)).toBe(false);
      expect(await store.deliveries.finishDelivery(first.token, d.id, { status: "done" })).toBe(false);
      expect(await store.leases.renewLease(second.token, 60_000)).toBe(true);
      expect(
        await store.deliveries.recordOutcome(second.token, d.id, "h", { status: "done", summary: "ok" }, 0.1),
      ).toBe(true);
      expect(await store.deliveries.finishDelivery(second.token, d.id, { status: "done" })).toBe(true);
      const shown = await store.deliveries.getDelivery(d.id);
      expect(shown?.delivery.status).toBe("done");
      expect(shown?.outcomes).toMatchObject([
        { handler: "h", status: "done", detail: "ok", attempts: 1, retryable: true },
      ]);
      expect(await store.leases.pendingWork(new Date())).toBe(0);
    });

    it("keeps the outcomes written just before the finish that was asked for without waiting for them", async () => {
      // The engine's order (engine/delivery.ts): outcome writes asked for, then the finish, then all awaited.
      for (let i = 0; i < 8; i++) await store.deliveries.record(deliveryOf("push", examplePayload("push")));
      const claims = await store.deliveries.claimDeliveries(60_000, 8);
      expect(claims).toHaveLength(8);
      const held = await Promise.all(
        claims.map(({ token, delivery: { id } }) => {
          const outcomes = ["a", "b"].map((h) =>
            store.deliveries.recordOutcome(token, id, h, { status: "done", summary: h }, 0.1),
          );
          const finished = store.deliveries.finishDelivery(token, id, { status: "done" });
          return Promise.all([...outcomes, finished]);
        }),
      );
      expect(held.flat().every((h) => h)).toBe(true);
      for (const { delivery } of claims) {
        const shown = await store.deliveries.getDelivery(delivery.id);
        expect(shown?.delivery.status).toBe("done");
        expect(shown?.outcomes.map((o) => [o.handler, o.detail])).toEqual([
          ["a", "a"],
          ["b", "b"],
        ]);
      }
    });

    it("tells when the longest-waiting delivery became due, leaving running ones out", async () => {
      expect(await store.deliveries.oldestDueAt()).toBeUndefined();
      const before = Date.now();
      const first = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(first);
      const second = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(second);
      const oldest = (await store.deliveries.oldestDueAt())!.getTime();
      expect(oldest).toBeGreaterThanOrEqual(before - 1);
      expect(oldest).toBeLessThanOrEqual(Date.now());
      // Both claimed: nothing is waiting.
      const claims = await store.deliveries.claimDeliveries(60_000, 2);
      expect(claims).toHaveLength(2);
      expect(await store.deliveries.oldestDueAt()).toBeUndefined();
      // One waits for a retry an hour from now: due then, not now.
      const retryAt = new Date(Date.now() + 3_600_000);
      await store.deliveries.finishDelivery(claims[0]!.token, claims[0]!.delivery.id, {
        status: "failed",
        retryAt,
        lastError: "boom",
      });
      await store.deliveries.finishDelivery(claims[1]!.token, claims[1]!.delivery.id, { status: "done" });
      expect((await store.deliveries.oldestDueAt())?.getTime()).toBe(retryAt.getTime());
    });

    it("retries a failed delivery at its time, counts handler attempts, and replays a dead one", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(d);
      const c1 = (await store.deliveries.claimDelivery(60_000))!;
      await store.deliveries.recordOutcome(c1.token, d.id, "a", { status: "failed", error: "boom" }, 0);
      await store.deliveries.recordOutcome(c1.token, d.id, "b", { status: "skipped", reason: "n/a" }, 0);
      const retryAt = new Date(Date.now() + 60_000);
      expect(
        await store.deliveries.finishDelivery(c1.token, d.id, { status: "failed", retryAt, lastError: "a: boom" }),
      ).toBe(true);
      expect(await store.deliveries.claimDelivery(60_000)).toBeUndefined();
      expect((await store.leases.nextDueAt())?.getTime()).toBe(retryAt.getTime());
      expect(await store.deliveries.depth()).toBe(1);
      expect((await store.deliveries.listDeliveries({ status: "failed" })).map((x) => x.lastError)).toEqual([
        "a: boom",
      ]);

      // Redelivered while waiting: replay queues it now with outcomes cleared.
      expect(await store.deliveries.replayDelivery(d.id)).toBe(true);
      const c2 = (await store.deliveries.claimDelivery(60_000))!;
      expect(c2.delivery).toMatchObject({ id: d.id, attempts: 1, lastError: undefined });
      expect(c2.outcomes).toEqual([]);
      expect(await store.deliveries.replayDelivery(d.id)).toBe(false); // running
      await store.deliveries.recordOutcome(
        c2.token,
        d.id,
        "a",
        { status: "failed", error: "still", retryable: false },
        0,
      );
      await store.deliveries.recordOutcome(
        c2.token,
        d.id,
        "a",
        { status: "failed", error: "again", retryable: false },
        0,
      );
      await store.deliveries.finishDelivery(c2.token, d.id, { status: "dead", lastError: "a: again" });
      const dead = await store.deliveries.getDelivery(d.id);
      expect(dead?.delivery).toMatchObject({ status: "dead", lastError: "a: again" });
      expect(dead?.outcomes).toMatchObject([
        { handler: "a", status: "failed", detail: "again", retryable: false, attempts: 2 },
      ]);
      expect(await store.deliveries.replayDelivery("no-such-id")).toBe(false);
    });

    it("gives each delivery's handler decisions as one line each, in handler order, and deliveries' summaries by id, for the console", async () => {
      const took = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(took);
      const c1 = (await store.deliveries.claimDelivery(60_000))!;
      expect(c1.delivery.id).toBe(took.id);
      const long = `${"x".repeat(500)}\nsecond line`;
      for (const [handler, outcome] of [
        ["rerun", { status: "done", summary: "\n  re-ran 2 jobs  \n\nThe rule `flaky` matched." }],
        ["checks", { status: "skipped", reason: "no policy" }],
        ["z-last", { status: "failed", error: long }],
      ] as [string, Outcome][])
        expect(await store.deliveries.recordOutcome(c1.token, took.id, handler, outcome, 0)).toBe(true);
      await store.deliveries.finishDelivery(c1.token, took.id, { status: "done" });
      const skipped = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(skipped);
      const c2 = (await store.deliveries.claimDelivery(60_000))!;
      await store.deliveries.recordOutcome(
        c2.token,
        skipped.id,
        "rerun",
        { status: "skipped", reason: "not its event" },
        0,
      );
      await store.deliveries.finishDelivery(c2.token, skipped.id, { status: "done" });
      const waiting = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(waiting);

      const found = await store.browse.decisionsOf([took.id, skipped.id, waiting.id, "no-such-id"]);
      expect([...found.keys()].sort()).toEqual([took.id, skipped.id].sort());
      expect(found.get(took.id)).toEqual([
        { handler: "checks", status: "skipped", line: "no policy" },
        { handler: "rerun", status: "done", line: "re-ran 2 jobs" },
        { handler: "z-last", status: "failed", line: `${"x".repeat(159)}…` },
      ]);
      expect(found.get(skipped.id)).toEqual([{ handler: "rerun", status: "skipped", line: "not its event" }]);
      expect((await store.browse.decisionsOf([])).size).toBe(0);

      const summaries = await store.browse.summariesOf([took.id, waiting.id, "no-such-id"]);
      expect(summaries.map((d) => d.id).sort()).toEqual([took.id, waiting.id].sort());
      expect(summaries.find((d) => d.id === took.id)).toMatchObject({
        event: "push",
        status: "done",
        attempts: 1,
        receivedAt: took.receivedAt,
      });
      expect(summaries.find((d) => d.id === waiting.id)).toMatchObject({
        event: "push",
        status: "queued",
        attempts: 0,
      });
      expect(await store.browse.summariesOf([])).toEqual([]);
    });

    it("shows every handler run in the history once, oldest first, across retries and a replay", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(d);
      const runs = async () =>
        (await store.deliveries.getDelivery(d.id))!.attempts.map(
          (a) => `${a.handler}#${a.attempt}:${a.status}:${a.detail ?? ""}`,
        );
      // Runs are ordered by when they were recorded; a few ms apart so each has its own time.
      const record = async (token: string, handler: string, outcome: Outcome) => {
        await new Promise((resolve) => setTimeout(resolve, 3));
        expect(await store.deliveries.recordOutcome(token, d.id, handler, outcome, 0)).toBe(true);
      };
      const c1 = (await store.deliveries.claimDelivery(60_000))!;
      await record(c1.token, "a", { status: "failed", error: "boom" });
      await record(c1.token, "b", { status: "skipped", reason: "n/a" });
      // The latest run of each handler is in the history as soon as it is recorded.
      expect(await runs()).toEqual(["a#1:failed:boom", "b#1:skipped:n/a"]);
      await record(c1.token, "a", { status: "failed", error: "twice" });
      expect(await runs()).toEqual(["a#1:failed:boom", "b#1:skipped:n/a", "a#2:failed:twice"]);
      await store.deliveries.finishDelivery(c1.token, d.id, {
        status: "failed",
        retryAt: new Date(Date.now() + 60_000),
        lastError: "a: twice",
      });
      // A replay clears the outcomes (attempts count from 1 again), not the runs made so far.
      expect(await store.deliveries.replayDelivery(d.id)).toBe(true);
      expect(await runs()).toEqual(["a#1:failed:boom", "b#1:skipped:n/a", "a#2:failed:twice"]);
      const c2 = (await store.deliveries.claimDelivery(60_000))!;
      await record(c2.token, "a", { status: "failed", error: "boom" });
      await record(c2.token, "a", { status: "done", summary: "ok" });
      await store.deliveries.finishDelivery(c2.token, d.id, { status: "done" });
      expect(await runs()).toEqual([
        "a#1:failed:boom",
        "b#1:skipped:n/a",
        "a#2:failed:twice",
        "a#1:failed:boom",
        "a#2:done:ok",
      ]);
      expect((await store.deliveries.getDelivery(d.id))!.outcomes).toMatchObject([
        { handler: "a", status: "done", attempts: 2 },
      ]);
    });

    it("lists newest first with filters and limit", async () => {
      const base = Date.now();
      const made = [0, 1, 2, 3].map((i) => ({
        ...deliveryOf(
          i % 2 ? "push" : "workflow_run",
          examplePayload(i % 2 ? "push" : "workflow_run", i % 2 ? undefined : "completed"),
        ),
        receivedAt: new Date(base + i * 1000),
      }));
      for (const d of made) await store.deliveries.record(d);
      expect((await store.deliveries.listDeliveries()).map((d) => d.id)).toEqual([
        made[3]!.id,
        made[2]!.id,
        made[1]!.id,
        made[0]!.id,
      ]);
      expect((await store.deliveries.listDeliveries({ event: "push" })).map((d) => d.id)).toEqual([
        made[3]!.id,
        made[1]!.id,
      ]);
      expect((await store.deliveries.listDeliveries({ limit: 1 })).map((d) => d.id)).toEqual([made[3]!.id]);
      expect(await store.deliveries.listDeliveries({ status: "done" })).toEqual([]);
    });

    it("gives released work back without using up an attempt", async () => {
      const d = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(d);
      const c = (await store.deliveries.claimDelivery(60_000))!;
      await store.leases.releaseLease(c.token);
      expect(await store.deliveries.finishDelivery(c.token, d.id, { status: "done" })).toBe(false);
      const again = (await store.deliveries.claimDelivery(60_000))!;
      expect(again.delivery.attempts).toBe(1);
    });

    it("claims a batch in one go: an expired lease first, never more than asked, each once", async () => {
      const made = [0, 1, 2].map((i) => ({
        ...deliveryOf("push", examplePayload("push")),
        receivedAt: new Date(Date.now() - 3000 + i * 1000),
      }));
      for (const d of made) await store.deliveries.record(d);
      // Records in one millisecond are due at once; which of them goes first is not promised.
      const stale = (await store.deliveries.claimDelivery(0))!;
      const batch = await store.deliveries.claimDeliveries(60_000, 2);
      expect(batch).toHaveLength(2);
      expect(batch[0]!.delivery).toMatchObject({ id: stale.delivery.id, attempts: 2 });
      expect(batch[1]!.delivery.attempts).toBe(1);
      expect(new Set(batch.map((c) => c.token)).size).toBe(2);
      const rest = await store.deliveries.claimDeliveries(60_000, 5);
      expect(new Set([...batch, ...rest].map((c) => c.delivery.id))).toEqual(new Set(made.map((d) => d.id)));
      expect(rest).toHaveLength(1);
      expect(await store.deliveries.claimDeliveries(60_000, 5)).toEqual([]);
      expect(await store.deliveries.recordOutcome(stale.token, stale.delivery.id, "h", { status: "done" }, 0)).toBe(
        false,
      );
      expect(await store.deliveries.depth()).toBe(3);
    });

    it("purges done deliveries past retention and keeps dead letters", async () => {
      const done = deliveryOf("push", examplePayload("push"));
      const dead = deliveryOf("push", examplePayload("push"));
      await store.deliveries.record(done);
      await store.deliveries.record(dead);
      for (let i = 0; i < 2; i++) {
        const c = (await store.deliveries.claimDelivery(60_000))!;
        await store.deliveries.recordOutcome(c.token, c.delivery.id, "h", { status: "failed", error: "x" }, 0);
        const decision =
          c.delivery.id === done.id ? { status: "done" as const } : { status: "dead" as const, lastError: "h: x" };
        await store.deliveries.finishDelivery(c.token, c.delivery.id, decision);
      }
      expect(await store.deliveries.purgeFinished(new Date(Date.now() - 60_000))).toBe(0);
      expect(await store.deliveries.purgeFinished(new Date(Date.now() + 1))).toBe(1);
      expect(await store.deliveries.getDelivery(done.id)).toBeUndefined();
      expect((await store.deliveries.getDelivery(dead.id))?.outcomes).toHaveLength(1);
      expect(await store.deliveries.record(done)).toBe("recorded"); // its id is forgotten with it
    });

    it("purges more finished deliveries than one batch holds, letting other work run between batches", async () => {
      const count = 2_300;
      const deliveries = Array.from({ length: count }, (_, i) => deliveryOf("ping", { zen: `z${i}`, hook_id: i }));
      const ids = deliveries.map((d) => d.id);
      await inChunks(count, (i) => store.deliveries.record(deliveries[i]!));
      for (;;) {
        const claims = await store.deliveries.claimDeliveries(60_000, 500);
        if (claims.length === 0) break;
        await inChunks(claims.length, (i) =>
          store.deliveries.finishDelivery(claims[i]!.token, claims[i]!.delivery.id, { status: "done" }),
        );
      }
      // Work queued behind the purge's start: it runs before the purge ends, not after.
      let settled = false;
      let ranDuring = false;
      const purge = store.deliveries.purgeFinished(new Date(Date.now() + 60_000)).finally(() => (settled = true));
      setImmediate(() => (ranDuring = !settled));
      expect(await purge).toBe(count);
      expect(ranDuring).toBe(true);
      expect(await store.deliveries.getDelivery(ids[0]!)).toBeUndefined();
      expect(await store.deliveries.getDelivery(ids[count - 1]!)).toBeUndefined();
      expect(await store.deliveries.purgeFinished(new Date(Date.now() + 60_000))).toBe(0);
    }, 60_000);
  });

  describe("scheduled tasks", () => {
    it("dedups by key unless replace, and a re-schedule during a run is a new generation", async () => {
      const later = new Date(Date.now() + 60_000);
      await store.tasks.scheduleTask("h", { key: "k", runAt: later, data: "first", installationId: 7 });
      await store.tasks.scheduleTask("h", { key: "k", runAt: new Date(), data: "second" });
      expect((await store.tasks.listTasks()).map((t) => [t.data, t.installationId])).toEqual([["first", 7]]);
      expect(await store.tasks.claimTask(60_000)).toBeUndefined();
      await store.tasks.scheduleTask("h", { key: "k", runAt: new Date(), data: "third", replace: true });
      const run = (await store.tasks.claimTask(60_000))!;
      expect(run.task).toMatchObject({ handler: "h", key: "k", data: "third", status: "running", attempts: 0 });
      // The task schedules its next run while running: finishing this run must not delete it.
      await store.tasks.scheduleTask("h", { key: "k", runAt: later, data: "next" });
      await store.tasks.finishTask(run, { status: "done" });
      expect((await store.tasks.listTasks()).map((t) => [t.key, t.data, t.status])).toEqual([["k", "next", "pending"]]);
      await store.tasks.cancelTask("h", "k");
      expect(await store.tasks.listTasks()).toEqual([]);
    });

    it("retries, parks dead with the last error, and takes back an expired task lease", async () => {
      await store.tasks.scheduleTask("h", { key: "a:b", runAt: new Date(), data: { n: 1 } });
      await store.tasks.scheduleTask("h:a", { key: "b", runAt: new Date(Date.now() + 60_000), data: null });
      const first = (await store.tasks.claimTask(0))!;
      const taken = (await store.tasks.claimTask(60_000))!;
      expect(taken.task.key).toBe("a:b");
      await store.tasks.finishTask(first, { status: "done" }); // lost its lease: no effect
      expect(await store.tasks.listTasks()).toHaveLength(2);
      await store.tasks.finishTask(taken, { status: "retry", retryAt: new Date(), lastError: "once" });
      const again = (await store.tasks.claimTask(60_000))!;
      expect(again.task).toMatchObject({ key: "a:b", attempts: 1, lastError: "once" });
      await store.tasks.finishTask(again, { status: "dead", lastError: "twice" });
      const tasks = await store.tasks.listTasks();
      expect(tasks.map((t) => [t.handler, t.key, t.status, t.attempts, t.lastError])).toEqual([
        ["h", "a:b", "dead", 2, "twice"],
        ["h:a", "b", "pending", 0, undefined],
      ]);
      expect(await store.leases.pendingWork(new Date())).toBe(0);
      expect(await store.leases.pendingWork(new Date(Date.now() + 120_000))).toBe(1);
    });
  });

  describe("what handlers get", () => {
    it("a handler's context store is the kv part's handler methods only, in deliveries, tasks and starts alike", async () => {
      const seen: { delivery?: Store; task?: Store; start?: Store } = {};
      const probe = defineHandler<unknown>({
        name: "probe",
        events: ["push"],
        async start(ctx) {
          seen.start = ctx.store;
        },
        async handle(ctx) {
          seen.delivery = ctx.store;
          await ctx.store.set("probe:seen", ctx.deliveryId);
          await ctx.scheduler.schedule({ key: "later", runAt: new Date(), data: null });
          return { status: "done", summary: "probed" };
        },
        async onTask(ctx) {
          seen.task = ctx.store;
        },
      });
      const engine = testEngine(store, [probe]);
      await engine.start();
      try {
        const d = deliveryOf("push", examplePayload("push"));
        expect(await engine.intake.record(d)).toBe("recorded");
        await engine.idle();
        // Starts run in the background: wait for this one rather than assume it ran.
        await vi.waitFor(() => expect(seen.start).toBeDefined(), { timeout: 30_000 });
        for (const view of [seen.delivery, seen.task, seen.start]) {
          expect(view).toBeDefined();
          expect(Object.keys(view!).sort()).toEqual([
            "audit",
            "auditLog",
            "claim",
            "delete",
            "get",
            "list",
            "release",
            "replaceIf",
            "set",
          ]);
          for (const wider of [
            "finishDelivery",
            "recordOutcome",
            "deliveries",
            "tasks",
            "leases",
            "purgeExpired",
            "close",
          ])
            expect(wider in view!).toBe(false);
          expect(view).not.toBe(store.kv);
        }
        // The narrow view writes through to the store's kv part.
        expect(await store.kv.get("probe:seen")).toBe(d.id);
        expect((await store.deliveries.getDelivery(d.id))?.delivery.status).toBe("done");
      } finally {
        await engine.stop(1000);
      }
    });
  });
}

describe("sqlite store", () => contract(sqliteBackend));
describe.skipIf(!redisUp)("redis store", () => contract(redisBackend));
describe.skipIf(!postgresUp)("postgres store", () => contract(async () => postgresStores()));
describe.skipIf(!clusterAvailable)("redis cluster store", () => {
  // One cluster for the suite; each test its own prefix, so its keys hash to a slot of their own (on any of the three nodes).
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 120_000);
  afterAll(async () => cluster?.stop());
  contract(async () => redisStores(cluster.url));
});
describe.skipIf(!valkeyAvailable)("valkey store", () => {
  // Valkey (the machine's valkey-server) in place of Redis: the same client, the same keys and scripts.
  let valkey: TestValkey;
  beforeAll(async () => {
    valkey = await startValkey();
  }, 60_000);
  afterAll(async () => valkey?.stop());
  contract(async () => redisStores(valkey.url));
});
describe.skipIf(!valkeyAvailable)("valkey cluster store", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster("valkey");
  }, 120_000);
  afterAll(async () => cluster?.stop());
  contract(async () => redisStores(cluster.url));
});
