// The SQLite store syncs its write-ahead log behind the group commit's commits, off the event loop
// (src/store/sqlite/wal-write-behind.ts). What that must not change: every recorded delivery is
// there when the store is opened again, and closing while a sync is under way leaves no file
// descriptor on the log behind (a held descriptor would keep a deleted log's space). And under
// continuous writes the log is copied in short cycles, each after the commit that filled it, whose
// deliveries are answered first, with the database file's sync behind the copy
// (src/store/sqlite/checkpoints.ts) and the log not reused before it ends; once the log holds its
// set size it is caught up and reused, never left to grow.
import { execFileSync } from "node:child_process";
import { closeSync, constants, open, openSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openSqliteStore, WAL_PAGES_BEFORE_CHECKPOINT, WAL_PAGES_BEFORE_COPY } from "../../src/store/sqlite/store.js";
import { deliveryOf, examplePayload, tempDir } from "../engine/helpers.js";

/**
 * Holds every thread of libuv's pool: each opens a FIFO for reading, which blocks until a writer
 * opens it. Work asked for meanwhile waits behind them, in order.
 */
async function holdThreadPool(dir: string, name: string): Promise<{ release(): Promise<void> }> {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const fifos = Array.from({ length: threads }, (_, i) => join(dir, `${name}-${i}.fifo`));
  for (const fifo of fifos) execFileSync("mkfifo", [fifo]);
  const opened = fifos.map(
    (fifo) =>
      new Promise<number>((resolve, reject) => open(fifo, "r", (error, fd) => (error ? reject(error) : resolve(fd)))),
  );
  let released = false;
  const hold = {
    async release() {
      if (released) return;
      released = true;
      for (const fifo of fifos) {
        // Without O_NONBLOCK this open would wait for a reader not yet on a thread.
        const writer = await vi.waitFor(() => openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK), {
          timeout: 30_000,
        });
        closeSync(writer);
      }
      // Closed here, not on the pool: its threads may be held again by then.
      for (const fd of await Promise.all(opened)) closeSync(fd);
    },
  };
  // Released first if the test fails while holding: the temporary directory's removal needs the pool.
  cleanups.unshift(() => hold.release());
  return hold;
}

/** The store in `dir`, opened again, holds exactly the deliveries `ids`. */
async function expectEveryDelivery(dir: string, ids: string[]): Promise<void> {
  const store = openSqliteStore(dir);
  try {
    expect(await store.deliveries.depth()).toBe(ids.length);
    for (const id of ids) expect((await store.deliveries.getDelivery(id))?.delivery.id).toBe(id);
  } finally {
    await store.close();
  }
}

/** This process's open descriptors on `file`. */
function descriptorsOn(file: string): number {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(file);
    } catch {
      return false;
    }
  }).length;
}

/**
 * A store in a new directory, with another connection that reads its log's state (frames in it,
 * frames copied) without copying anything, and `batch()`, which records 20 deliveries at once.
 */
async function watchedStore() {
  const { dir, cleanup } = await tempDir();
  cleanups.push(cleanup);
  const store = openSqliteStore(dir);
  const other = new Database(join(dir, "steward.db"));
  cleanups.push(async () => {
    other.close();
    await store.close();
  });
  const log = () => (other.pragma("wal_checkpoint(NOOP)") as { log: number; checkpointed: number }[])[0]!;
  const payload = examplePayload("push");
  const ids: string[] = [];
  const batch = async () => {
    const deliveries = Array.from({ length: 20 }, () => deliveryOf("push", payload));
    ids.push(...deliveries.map((d) => d.id));
    await Promise.all(deliveries.map((d) => store.deliveries.record(d)));
  };
  return { dir, store, other, log, batch, ids };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

describe("sqlite write-behind of the log", () => {
  it.skipIf(process.platform !== "linux")(
    "keeps every delivery and closes its descriptor on the log when the store closes mid-sync",
    async () => {
      const { dir, cleanup } = await tempDir();
      cleanups.push(cleanup);
      const wal = join(dir, "steward.db-wal");
      const ids: string[] = [];
      for (let round = 0; round < 3; round++) {
        const store = openSqliteStore(dir);
        expect(descriptorsOn(wal)).toBeGreaterThan(0);
        for (let batch = 0; batch < 5; batch++) {
          const deliveries = Array.from({ length: 20 }, () => deliveryOf("push", examplePayload("push")));
          ids.push(...deliveries.map((d) => d.id));
          expect(await Promise.all(deliveries.map((d) => store.deliveries.record(d)))).toEqual(
            deliveries.map(() => "recorded"),
          );
        }
        // Closed right after its last commit, with that commit's sync of the log likely under way.
        await store.close();
        await expect.poll(() => descriptorsOn(wal)).toBe(0);
      }
      await expectEveryDelivery(dir, ids);
    },
  );

  it("keeps the log within the checkpoint's size under continuous writes, and every delivery across a reopen", async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const wal = join(dir, "steward.db-wal");
    const store = openSqliteStore(dir);
    const pageSize = 4096;
    const payload = examplePayload("push");
    const ids: string[] = [];
    let largest = 0;
    // Several times the checkpoint's size of log (about 75 MB unchecked): records, claims and finishes.
    while (ids.length < 6_000) {
      const deliveries = Array.from({ length: 50 }, () => deliveryOf("push", payload));
      ids.push(...deliveries.map((d) => d.id));
      await Promise.all(deliveries.map((d) => store.deliveries.record(d)));
      const claims = await store.deliveries.claimDeliveries(60_000, 50);
      await Promise.all(claims.map((c) => store.deliveries.finishDelivery(c.token, c.delivery.id, { status: "done" })));
      largest = Math.max(largest, statSync(wal).size);
    }
    // The file grows to the checkpoint's size, what is written while a copy waits for its syncs
    // (at most half that again, then they are done on the event loop) and the commit that crossed
    // it, and is then reused.
    expect(largest).toBeLessThan((2 * WAL_PAGES_BEFORE_CHECKPOINT + 1_000) * pageSize);
    await store.close();
    const again = openSqliteStore(dir);
    try {
      for (const id of ids) expect((await again.deliveries.getDelivery(id))?.delivery.status).toBe("done");
    } finally {
      await again.close();
    }
  });

  it.skipIf(process.platform !== "linux").each(["the sync ends", "the log doubles first", "the store closes first"])(
    "copies the log after the commit that filled it is answered, and keeps the log until the database file is synced (%s)",
    async (ending) => {
      const { dir, store, other, log, batch, ids } = await watchedStore();
      // The store's syncs run on libuv's thread pool: with every thread held, none of them ends.
      const first = await holdThreadPool(dir, "first");
      for (;;) {
        expect(ids.length).toBeLessThan(20_000);
        await batch();
        if (log().log >= WAL_PAGES_BEFORE_CHECKPOINT) break;
      }
      // Answered with the log full, and in the next turn still nothing copied: the copy waits for the log's sync.
      expect(log().checkpointed).toBe(0);
      await new Promise((resolve) => setImmediate(resolve));
      expect(log().checkpointed).toBe(0);
      // The threads taken again behind the log's sync, so the database file's sync, asked for after
      // the copy, waits behind them; then the first hold ends.
      const second = await holdThreadPool(dir, "second");
      await first.release();
      await expect.poll(() => log().checkpointed, { timeout: 30_000 }).toBeGreaterThan(0);
      const copied = log();
      // Copied, the file not synced: later commits append to the log, never restart it.
      let previous = copied.log;
      for (let i = 0; i < 20; i++) {
        await batch();
        const now = log();
        expect(now.checkpointed).toBe(copied.checkpointed);
        expect(now.log).toBeGreaterThan(previous);
        previous = now.log;
      }
      if (ending === "the log doubles first") {
        // A disk slow for the writes: once the log is half as long again as the checkpoint's size,
        // the syncs are done on the event loop, and the log restarts while the pool's sync still waits.
        for (let i = 0; log().log >= previous; i++) {
          expect(log().log).toBeLessThan(2 * WAL_PAGES_BEFORE_CHECKPOINT + 1_000);
          await batch();
          previous = Math.max(previous, log().log);
        }
        await second.release();
        await store.close();
      } else if (ending === "the sync ends") {
        // Once the file is synced, the next checkpoint copies the rest and the log restarts.
        await second.release();
        for (let i = 0; log().log >= previous; i++) {
          expect(i).toBeLessThan(1_000);
          await batch();
        }
        await store.close();
      } else {
        // Closing does not wait for the pool; the descriptors go once the sync under way ends.
        other.close();
        await store.close();
        await second.release();
        await expect.poll(() => descriptorsOn(join(dir, "steward.db"))).toBe(0);
      }
      await expectEveryDelivery(dir, ids);
    },
  );

  it.skipIf(process.platform !== "linux")(
    "copies the log in short cycles, each kept until the database file is synced, and restarts it only once it holds its size",
    async () => {
      const { dir, store, other, log, batch, ids } = await watchedStore();
      // A cycle begins in the turn after the commit that left enough of the log not yet copied; its
      // syncs wait on the held pool. The batch after it writes past the cycle's read mark.
      const first = await holdThreadPool(dir, "first");
      while (log().log < WAL_PAGES_BEFORE_COPY) await batch();
      await batch();
      expect(log().checkpointed).toBe(0);
      const second = await holdThreadPool(dir, "second");
      await first.release();
      await expect.poll(() => log().checkpointed, { timeout: 30_000 }).toBeGreaterThan(0);
      // Copied up to the cycle's read mark only, long before the log holds its size.
      const copied = log();
      expect(copied.checkpointed).toBeLessThan(copied.log);
      expect(copied.log).toBeLessThan(WAL_PAGES_BEFORE_CHECKPOINT);
      // The file not synced: commits append to the log, whose next cycle waits for this one.
      let previous = copied;
      for (let i = 0; i < 40; i++) {
        await batch();
        const now = log();
        expect(now.checkpointed).toBe(copied.checkpointed);
        expect(now.log).toBeGreaterThan(previous.log);
        previous = now;
      }
      await second.release();
      // Under steady writes: cycle after cycle, the log neither restarted nor fully copied, until
      // it holds its size; then it is caught up and restarts.
      let copies = 1;
      let largest = previous.log;
      let lastCopy = previous;
      for (let i = 0; ; i++) {
        expect(i).toBeLessThan(10_000);
        // A machine whose syncs are slow for the writes would see few cycles before the log
        // holds its size: the writes wait for the cycle under way once it is well behind.
        if (previous.log - lastCopy.log > 3 * WAL_PAGES_BEFORE_COPY && previous.checkpointed < previous.log) {
          const before = previous.checkpointed;
          await expect.poll(() => log().checkpointed, { timeout: 30_000 }).toBeGreaterThan(before);
        }
        await batch();
        const now = log();
        if (now.log < previous.log) break;
        if (now.checkpointed > previous.checkpointed) {
          lastCopy = now;
          if (now.checkpointed < now.log) copies++;
        }
        largest = now.log;
        previous = now;
      }
      expect(copies).toBeGreaterThanOrEqual(3);
      expect(largest).toBeGreaterThanOrEqual(WAL_PAGES_BEFORE_CHECKPOINT);
      other.close();
      await store.close();
      await expectEveryDelivery(dir, ids);
    },
  );

  it("records and reads back at durability power, where each commit syncs the log itself", async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const store = openSqliteStore(dir, { durability: "power" });
    const d = deliveryOf("push", examplePayload("push"));
    expect(await store.deliveries.record(d)).toBe("recorded");
    await store.close();
    const again = openSqliteStore(dir);
    expect((await again.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
    await again.close();
  });
});
