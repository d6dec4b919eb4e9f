// The console's listing queries, run the same on every store: filters, access scope,
// keyset pages that neither skip nor repeat, per-minute activity and dead-letter counts. Redis
// Cluster too (three primaries started here on first use): its console scripts read the
// per-delivery hashes they find in an index.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { IncomingDelivery } from "../../src/store/records.js";
import type { DeliveryQuery } from "../../src/store/browse.js";
import type { StewardStore } from "../../src/store/contract.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { deliveryOf, examplePayload } from "../engine/helpers.js";
import { redisStores, redisUp, redisUrl } from "../redis/support.js";
import { postgresStores, postgresUp } from "../postgres/support.js";
import { clusterAvailable, startRedisCluster, type TestCluster } from "../redis/cluster-support.js";

type AnyStore = StewardStore;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

let cluster: Promise<TestCluster> | undefined;
afterAll(async () => (await cluster)?.stop(), 60_000);

const backends: { name: string; skip: boolean; open(): Promise<AnyStore> }[] = [
  {
    name: "sqlite",
    skip: false,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "steward-browse-"));
      const store = openSqliteStore(dir);
      cleanups.push(() => {
        store.close();
        rmSync(dir, { recursive: true, force: true });
      });
      return store;
    },
  },
  {
    name: "redis",
    skip: !redisUp,
    async open() {
      const stores = redisStores();
      cleanups.push(() => stores.dispose());
      return stores.open();
    },
  },
  {
    name: "redis cluster",
    skip: !clusterAvailable,
    async open() {
      cluster ??= startRedisCluster();
      const stores = redisStores((await cluster).url);
      cleanups.push(() => stores.dispose());
      return stores.open();
    },
  },
  {
    name: "postgres",
    skip: !postgresUp,
    async open() {
      const stores = postgresStores();
      cleanups.push(() => stores.dispose());
      return stores.open();
    },
  },
];

const REPOS = ["acme/web", "acme/api", "acme/billing"];
const BASE = Date.UTC(2026, 0, 1, 12, 0, 0);

/** 60 deliveries, one per 10 s (two share a millisecond), round robin over repositories and events. */
function corpus(): IncomingDelivery[] {
  const out: IncomingDelivery[] = [];
  for (let i = 0; i < 60; i++) {
    const event = i % 2 === 0 ? "push" : "workflow_run";
    const payload = examplePayload(event);
    payload.repository = { ...(payload.repository ?? {}), full_name: REPOS[i % 3] };
    const d = deliveryOf(event, payload, `d-${String(i).padStart(3, "0")}`);
    d.receivedAt = new Date(BASE + (i === 7 ? 6 : i) * 10_000);
    out.push(d);
  }
  return out;
}

/** Record every delivery, then finish each: every fifth dead (handler "probe" failed), the rest done. */
async function fill(store: AnyStore): Promise<IncomingDelivery[]> {
  const all = corpus();
  for (const d of all) await store.deliveries.record(d);
  for (;;) {
    const claim = await store.deliveries.claimDelivery(60_000);
    if (!claim) break;
    const n = Number(claim.delivery.id.slice(2));
    const dead = n % 5 === 0;
    await store.deliveries.recordOutcome(
      claim.token,
      claim.delivery.id,
      "probe",
      dead ? { status: "failed", error: "boom", retryable: false } : { status: "done", summary: "fine" },
      0.01,
    );
    await store.deliveries.finishDelivery(
      claim.token,
      claim.delivery.id,
      dead ? { status: "dead", lastError: "boom" } : { status: "done" },
    );
  }
  return all;
}

function newestFirst(list: IncomingDelivery[]): string[] {
  return [...list]
    .sort((a, b) => b.receivedAt.getTime() - a.receivedAt.getTime() || (a.id < b.id ? 1 : -1))
    .map((d) => d.id);
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`console listing on ${backend.name}`, () => {
    it("pages newest first through every delivery without skipping or repeating, ties included", async () => {
      const store = await backend.open();
      const all = await fill(store);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.browse.browseDeliveries({ limit: 7, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((d) => d.id));
        cursor = page.next;
        pages++;
      } while (cursor && pages < 50);
      // Ties on received time are ordered by each store's own key; compare as sets plus time order.
      expect(new Set(seen)).toEqual(new Set(all.map((d) => d.id)));
      expect(seen).toHaveLength(60);
      const times = seen.map((id) => all.find((d) => d.id === id)!.receivedAt.getTime());
      expect(times).toEqual([...times].sort((a, b) => b - a));
    });

    it("pages an outcome filter within the reader's repositories and a time window without skipping or repeating", async () => {
      const store = await backend.open();
      const all = await fill(store);
      const failed = (d: IncomingDelivery) => Number(d.id.slice(2)) % 5 === 0;
      const walk = async (q: Omit<DeliveryQuery, "limit" | "cursor">) => {
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.browse.browseDeliveries({ ...q, limit: 2, ...(cursor ? { cursor } : {}) });
          seen.push(...page.items.map((d) => d.id));
          cursor = page.next;
          pages++;
        } while (cursor && pages < 100);
        return seen;
      };
      expect(await walk({ handler: "probe", outcome: "failed" })).toEqual(newestFirst(all.filter(failed)));
      expect(await walk({ outcome: "done", repositories: ["acme/web", "acme/api"] })).toEqual(
        newestFirst(all.filter((d) => !failed(d) && d.repository !== "acme/billing")),
      );
      const since = BASE + 50_000;
      const until = BASE + 450_000;
      expect(await walk({ handler: "probe", outcome: "done", event: "push", since, until })).toEqual(
        newestFirst(
          all.filter(
            (d) =>
              !failed(d) && d.event === "push" && d.receivedAt.getTime() >= since && d.receivedAt.getTime() < until,
          ),
        ),
      );
      expect(await walk({ handler: "probe", outcome: "failed", repository: "acme/api" })).toEqual(
        newestFirst(all.filter((d) => failed(d) && d.repository === "acme/api")),
      );
    });

    it("filters by event, repository, status, handler outcome and time, within the reader's repositories", async () => {
      const store = await backend.open();
      const all = await fill(store);
      const ids = async (q: DeliveryQuery) => (await store.browse.browseDeliveries(q)).items.map((d) => d.id);
      expect(await ids({ limit: 200, event: "push", repository: "acme/web" })).toEqual(
        newestFirst(all.filter((d) => d.event === "push" && d.repository === "acme/web")),
      );
      expect(await ids({ limit: 200, status: "dead" })).toEqual(
        newestFirst(all.filter((d) => Number(d.id.slice(2)) % 5 === 0)),
      );
      expect(await ids({ limit: 200, handler: "probe", outcome: "failed" })).toEqual(
        await ids({ limit: 200, status: "dead" }),
      );
      expect(await ids({ limit: 200, handler: "other" })).toEqual([]);
      const scoped = await ids({ limit: 200, repositories: ["acme/web", "acme/api"] });
      expect(scoped).toEqual(newestFirst(all.filter((d) => d.repository !== "acme/billing")));
      // A repository outside the reader's scope is not reachable by naming it.
      expect(await ids({ limit: 200, repository: "acme/billing", repositories: ["acme/web"] })).toEqual([]);
      const since = BASE + 200_000;
      const until = BASE + 400_000;
      expect(await ids({ limit: 200, since, until })).toEqual(
        newestFirst(all.filter((d) => d.receivedAt.getTime() >= since && d.receivedAt.getTime() < until)),
      );
      expect((await store.browse.browseDeliveries({ limit: 200, status: "dead" })).items[0]).toMatchObject({
        status: "dead",
        lastError: "boom",
        attempts: 1,
      });
    });

    it("pages retrying, queued and dead deliveries by status within the scope, and counts every dead letter of a scope", async () => {
      const store = await backend.open();
      const all = corpus();
      for (const d of all) await store.deliveries.record(d);
      const n = (d: { id: string }) => Number(d.id.slice(2));
      const retryAt = new Date(Date.now() + 3_600_000);
      // Every third waits for a retry, every third is dead, the rest go back to the queue (due later).
      for (const c of await store.deliveries.claimDeliveries(60_000, 200)) {
        const id = c.delivery.id;
        if (n(c.delivery) % 3 === 0)
          await store.deliveries.finishDelivery(c.token, id, { status: "failed", retryAt, lastError: "later" });
        else if (n(c.delivery) % 3 === 1)
          await store.deliveries.finishDelivery(c.token, id, { status: "dead", lastError: "boom" });
        else await store.leases.releaseLease(c.token, retryAt);
      }
      const repositories = ["acme/web", "acme/api"];
      const walk = async (q: Omit<DeliveryQuery, "limit" | "cursor">) => {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 100; pages++) {
          const page = await store.browse.browseDeliveries({ ...q, limit: 3, ...(cursor ? { cursor } : {}) });
          seen.push(...page.items.map((d) => d.id));
          cursor = page.next;
          if (!cursor) break;
        }
        return seen;
      };
      const inScope = (d: IncomingDelivery) => d.repository !== "acme/billing";
      expect(await walk({ status: "failed", repositories })).toEqual(
        newestFirst(all.filter((d) => inScope(d) && n(d) % 3 === 0)),
      );
      expect(await walk({ status: "queued", repositories, event: "push" })).toEqual(
        newestFirst(all.filter((d) => inScope(d) && n(d) % 3 === 2 && d.event === "push")),
      );
      expect(await walk({ status: "dead", repositories })).toEqual(
        newestFirst(all.filter((d) => inScope(d) && n(d) % 3 === 1)),
      );
      expect(await store.browse.countDead(repositories)).toBe(all.filter((d) => inScope(d) && n(d) % 3 === 1).length);

      // More dead letters in a scope than one page holds are all counted.
      for (let i = 0; i < 230; i++)
        await store.deliveries.record({
          ...deliveryOf("push", examplePayload("push"), `x-${i}`),
          repository: "acme/web",
        });
      for (
        let c = await store.deliveries.claimDeliveries(60_000, 200);
        c.length;
        c = await store.deliveries.claimDeliveries(60_000, 200)
      )
        for (const { token, delivery } of c)
          await store.deliveries.finishDelivery(token, delivery.id, { status: "dead", lastError: "boom" });
      expect(await store.browse.countDead(["acme/web"])).toBe(
        230 + all.filter((d) => d.repository === "acme/web" && n(d) % 3 === 1).length,
      );
    });

    it("counts dead letters and per-minute activity within the scope; a replayed dead letter leaves the dead list", async () => {
      const store = await backend.open();
      const all = await fill(store);
      expect(await store.browse.countDead()).toBe(12);
      expect(await store.browse.countDead(["acme/web"])).toBe(
        all.filter((d) => d.repository === "acme/web" && Number(d.id.slice(2)) % 5 === 0).length,
      );
      const activity = await store.browse.deliveryActivity(BASE);
      expect(activity.reduce((n, r) => n + r.count, 0)).toBe(60);
      expect(activity.filter((r) => r.status === "dead").reduce((n, r) => n + r.count, 0)).toBe(12);
      expect(activity.every((r) => r.minute % 60_000 === 0)).toBe(true);
      const scoped = await store.browse.deliveryActivity(BASE, ["acme/api"]);
      expect(scoped.reduce((n, r) => n + r.count, 0)).toBe(20);

      expect(await store.deliveries.replayDelivery("d-000")).toBe(true);
      expect(await store.browse.countDead()).toBe(11);
      expect(
        (await store.browse.browseDeliveries({ limit: 200, status: "dead" })).items.map((d) => d.id),
      ).not.toContain("d-000");
    });
  });
}

describe.skipIf(!redisUp)("console listing on redis: failed outcomes recorded before their index existed", () => {
  it("are still found, after the indexed ones, page by page", async () => {
    const stores = redisStores();
    cleanups.push(() => stores.dispose());
    const store = await stores.open();
    const all = await fill(store);
    // As a store written by a Steward without the failed-outcome zsets: none of them, and the
    // marker (set when the first Steward with them opened the store) ten minutes into the corpus;
    // failures received after it indexed, those before it not.
    const { Redis } = await import("ioredis");
    const client = new Redis(redisUrl);
    cleanups.push(() => void client.disconnect());
    await client.del(`${stores.prefix}ix:f`, `${stores.prefix}ix:f:probe`);
    await client.set(`${stores.prefix}ix:fsince`, String(BASE + 10 * 60_000));
    for (const d of all.filter(
      (x) => x.receivedAt.getTime() >= BASE + 10 * 60_000 && Number(x.id.slice(2)) % 5 === 0,
    )) {
      await client.zadd(`${stores.prefix}ix:f:probe`, d.receivedAt.getTime(), d.id);
      await client.zadd(`${stores.prefix}ix:f`, d.receivedAt.getTime(), d.id);
    }
    const reopened = await stores.open();
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await reopened.browse.browseDeliveries({
        handler: "probe",
        outcome: "failed",
        limit: 3,
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...page.items.map((d) => d.id));
      cursor = page.next;
      pages++;
    } while (cursor && pages < 100);
    expect(seen).toEqual(newestFirst(all.filter((d) => Number(d.id.slice(2)) % 5 === 0)));
  });
});
