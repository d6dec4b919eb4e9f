// The SQLite store syncs its write-ahead log behind the group commit's commits, off the event loop
// (src/store/sqlite/wal-write-behind.ts). What that must not change: every recorded delivery is
// there when the store is opened again, and closing while a sync is under way leaves no file
// descriptor on the log behind (a held descriptor would keep a deleted log's space).
import { readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
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
