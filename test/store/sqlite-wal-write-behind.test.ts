// The SQLite store syncs its write-ahead log behind the group commit's commits, off the event loop
// (src/store/sqlite/wal-write-behind.ts). What that must not change: every recorded delivery is
// there when the store is opened again, and closing while a sync is under way leaves no file
// descriptor on the log behind (a held descriptor would keep a deleted log's space). And under
// continuous writes the log is checkpointed at its set size and reused, never left to grow, in the
// turn after the commit that filled it, whose deliveries are answered first.
import { readdirSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore, WAL_PAGES_BEFORE_CHECKPOINT } from "../../src/store/sqlite/store.js";
import { deliveryOf, examplePayload, tempDir } from "../engine/helpers.js";

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
      const store = openSqliteStore(dir);
      try {
        expect(await store.deliveries.depth()).toBe(ids.length);
        for (const id of ids) expect((await store.deliveries.getDelivery(id))?.delivery.id).toBe(id);
      } finally {
        await store.close();
      }
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
    // The file grows to the checkpoint's size and the commit that crossed it, and is then reused.
    expect(largest).toBeLessThan((WAL_PAGES_BEFORE_CHECKPOINT + 1_000) * pageSize);
    await store.close();
    const again = openSqliteStore(dir);
    try {
      for (const id of ids) expect((await again.deliveries.getDelivery(id))?.delivery.status).toBe("done");
    } finally {
      await again.close();
    }
  });

  it("answers the commit that fills the log before copying it, and copies it in the next turn", async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const store = openSqliteStore(dir);
    // Another connection reads the log's state (frames in it, frames copied) without copying anything.
    const other = new Database(join(dir, "steward.db"));
    cleanups.push(async () => {
      other.close();
      await store.close();
    });
    const log = () => (other.pragma("wal_checkpoint(NOOP)") as { log: number; checkpointed: number }[])[0]!;
    const payload = examplePayload("push");
    for (let batch = 0; ; batch++) {
      expect(batch).toBeLessThan(1_000);
      const deliveries = Array.from({ length: 20 }, () => deliveryOf("push", payload));
      await Promise.all(deliveries.map((d) => store.deliveries.record(d)));
      const answered = log();
      if (answered.log < WAL_PAGES_BEFORE_CHECKPOINT) continue;
      // Answered with the log full and not copied yet.
      expect(answered.checkpointed).toBe(0);
      await new Promise((resolve) => setImmediate(resolve));
      expect(log()).toMatchObject({ busy: 0, log: answered.log, checkpointed: answered.log });
      break;
    }
  });

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
