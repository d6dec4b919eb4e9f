// Lease renewal and release are compare-and-set, on SQLite and on Redis: a holder that stalled
// past its lease (its renewal delayed until another replica took the expired lease) never
// writes over the new holder's lease; it is told it lost it instead. Two holders, two store
// connections (two replicas on Redis).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { withJobLease, type LeaseHolder } from "../../src/coordination/job-lease.js";
import { withStoreLock } from "../../src/coordination/lock.js";
import type { Store } from "../../src/store/types.js";
import { storeWith } from "../support/store-faults.js";
import { redisStores, redisUp } from "../redis/support.js";

interface Backend {
  /** Two connections to one store (two replicas). */
  open(): Promise<{ a: Store; b: Store; dispose(): Promise<void> }>;
}

const sqlite: Backend = {
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "steward-lease-renewal-"));
    const a = openSqliteStore(dir);
    const b = openSqliteStore(dir);
    return {
      a: a.kv,
      b: b.kv,
      async dispose() {
        a.close();
        b.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const redis: Backend = {
  async open() {
    const stores = redisStores();
    const a = await stores.open();
    const b = await stores.open();
    return { a: a.kv, b: b.kv, dispose: () => stores.dispose() };
  },
};

/** `store` whose writes wait while `stalled` (a process stopped between reading its lease and writing it back). */
function stallable(store: Store) {
  let gate: Promise<void> | undefined;
  let open = () => {};
  let waiting = 0;
  const held =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (gate) {
        waiting++;
        await gate;
      }
      return fn(...args);
    };
  const wrapped: Store = {
    claim: store.claim.bind(store),
    release: store.release.bind(store),
    get: store.get.bind(store),
    delete: store.delete.bind(store),
    list: store.list.bind(store),
    audit: store.audit.bind(store),
    auditLog: store.auditLog.bind(store),
    set: held(store.set.bind(store)),
    replaceIf: held(store.replaceIf.bind(store)),
  };
  return {
    store: wrapped,
    stall() {
      gate = new Promise((r) => (open = r));
    },
    resume() {
      gate = undefined;
      open();
    },
    waiting: () => waiting,
  };
}

for (const [name, backend] of [
  ["sqlite", sqlite],
  ["redis", redis],
] as const) {
  describe.skipIf(name === "redis" && !redisUp)(`lease renewal on ${name}`, () => {
    it("replaceIf writes only over the expected holder's value, and never brings back an expired one", async () => {
      const { a, b, dispose } = await backend.open();
      try {
        // Long leases while the holder's writes are checked (150 ms can pass between two awaits on a
        // loaded machine); the last renewal shortens it so that it lapses.
        expect(await a.claim("job", { ttlMs: 60_000, value: { token: "a" } })).toBe(true);
        expect(
          await b.replaceIf("job", { field: "token", equals: "b" }, { value: { token: "b" }, ttlMs: 60_000 }),
        ).toBe(false);
        expect(
          await a.replaceIf("job", { field: "token", equals: "a" }, { value: { token: "a", n: 2 }, ttlMs: 60_000 }),
        ).toBe(true);
        expect(await b.get("job")).toEqual({ token: "a", n: 2 });
        expect(
          await a.replaceIf("job", { field: "token", equals: "a" }, { value: { token: "a", n: 3 }, ttlMs: 150 }),
        ).toBe(true);
        await vi.waitFor(
          async () => expect(await b.claim("job", { ttlMs: 60_000, value: { token: "b" } })).toBe(true),
          { timeout: 30_000, interval: 20 },
        );
        // A's renewal and release after its lease expired and B took it: refused, B's lease stands.
        expect(
          await a.replaceIf("job", { field: "token", equals: "a" }, { value: { token: "a" }, ttlMs: 60_000 }),
        ).toBe(false);
        expect(await a.replaceIf("job", { field: "token", equals: "a" })).toBe(false);
        expect(await a.get("job")).toEqual({ token: "b" });
        expect(await b.replaceIf("job", { field: "token", equals: "b" })).toBe(true);
        expect(await a.get("job")).toBeUndefined();
        // Nothing there: nothing to replace (a renewal never resurrects a lease).
        expect(await a.replaceIf("job", { field: "token", equals: "b" }, { value: { token: "b" } })).toBe(false);
        expect(await a.get("job")).toBeUndefined();
      } finally {
        await dispose();
      }
    }, 90_000);

    it("a holder that stalled past its lease loses it to the second holder and is told so; the second keeps it", async () => {
      const { a, b, dispose } = await backend.open();
      const first = stallable(a);
      try {
        let firstSignal!: AbortSignal;
        let secondSignal!: AbortSignal;
        let heldDuringSecond: LeaseHolder | undefined;
        let firstDone!: () => void;
        const firstRunning = new Promise<void>((r) => (firstDone = r));
        const firstJob = withJobLease(
          first.store,
          "sync:acme",
          "the sync of acme",
          "replica A",
          async (signal) => {
            firstSignal = signal;
            first.stall();
            // Its renewal is stuck now; wait until it was attempted, then until the lease is lost.
            await vi.waitFor(() => expect(first.waiting()).toBeGreaterThan(0), { timeout: 30_000, interval: 10 });
            await firstRunning;
          },
          { ttlMs: 300 },
        );
        await vi.waitFor(() => expect(first.waiting()).toBeGreaterThan(0), { timeout: 30_000, interval: 10 });
        await withJobLease(
          b,
          "sync:acme",
          "the sync of acme",
          "replica B",
          async (signal) => {
            secondSignal = signal;
            // A resumes: its delayed renewal runs now, after B took the expired lease.
            first.resume();
            await vi.waitFor(() => expect(firstSignal.aborted).toBe(true), { timeout: 30_000, interval: 10 });
            // Two renewal periods of B pass with A's stale write having been tried.
            await new Promise((r) => setTimeout(r, 1_100));
            heldDuringSecond = await b.get<LeaseHolder>("sync:acme");
          },
          { ttlMs: 1_500, wait: true, pollMs: 20 },
        ); // B's lease outlives a stall of a second on a loaded machine; A's must lapse
        firstDone();
        await firstJob;
        expect((firstSignal.reason as Error).message).toMatch(/^lease taken by replica B, pid \d+ on /);
        expect(heldDuringSecond?.who).toBe("replica B");
        expect(secondSignal.aborted).toBe(false);
        // Both released: the key is free again.
        expect(await b.get("sync:acme")).toBeUndefined();
      } finally {
        first.resume();
        await dispose();
      }
    }, 90_000);

    it("a store lock released after it expired and was taken by another does not free the other's lock", async () => {
      const { a, b, dispose } = await backend.open();
      try {
        let bHolds = false;
        await withStoreLock(
          a,
          "budget-lock",
          async () => {
            // A overruns its lock's TTL; B takes the expired lock meanwhile.
            await vi.waitFor(
              async () =>
                expect(await b.claim("budget-lock", { ttlMs: 60_000, value: { owner: "replica-b", token: "b" } })).toBe(
                  true,
                ),
              { timeout: 30_000, interval: 20 },
            );
            bHolds = true;
          },
          { ttlMs: 150 },
        );
        expect(bHolds).toBe(true);
        expect(await b.get("budget-lock")).toEqual({ owner: "replica-b", token: "b" });
      } finally {
        await dispose();
      }
    }, 90_000);
  });
}

describe("a release the store fails once", () => {
  it("is tried again, so the job's next run takes the lease at once", async () => {
    const { a, dispose } = await sqlite.open();
    try {
      // The real store, whose compare-and-replace fails once the job has run (a busy store).
      let failures = 0;
      const blinking = storeWith(a, {
        replaceIf: (...args) =>
          failures-- > 0 ? Promise.reject(new Error("database is locked")) : a.replaceIf(...args),
      });
      expect(
        await withJobLease(blinking, "sync:acme", "sync acme", "test", async () => ((failures = 1), "first")),
      ).toBe("first");
      expect(failures).toBe(-1); // the failed try and the one after it
      expect(await a.get("sync:acme")).toBeUndefined();
      expect(await withJobLease(a, "sync:acme", "sync acme", "test", async () => "next")).toBe("next");
    } finally {
      await dispose();
    }
  });
});
