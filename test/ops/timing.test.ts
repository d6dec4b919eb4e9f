// The delivery timing record the console reads: two processes' records of the same store merge
// into the deployment's figures, percentiles read as their bucket's bound, and a record of a
// minute before the window is left out.
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { percentileBound, readTiming, timingRecorder } from "../../src/ops/timing.js";
import { tempDir } from "../engine/helpers.js";

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

describe("delivery timing record", () => {
  it("merges every process's minutes in the window", async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    const store = openSqliteStore(temp.dir);
    try {
      const a = timingRecorder(store.kv);
      const b = timingRecorder(store.kv);
      for (const s of [0.05, 0.3, 0.3, 4]) a.observe("queue", s);
      b.observe("queue", 700);
      a.observe("lag", 2);
      b.observe("lag", 45);
      await Promise.all([a.close(), b.close()]);

      const minute = Math.floor(Date.now() / 60_000) * 60_000;
      const window = await readTiming(store.kv, minute - 60_000);
      expect(window.queue).toMatchObject({ count: 5, max: 700 });
      expect(window.queue.sum).toBeCloseTo(704.65);
      expect(percentileBound(window.queue, 0.5)).toBe(0.5);
      expect(percentileBound(window.queue, 0.95)).toBe(1800);
      expect(window.lag).toMatchObject({ count: 2, max: 45 });
      expect(percentileBound(window.lag, 0.5)).toBe(2);

      // A window that begins after these minutes has none of them.
      expect((await readTiming(store.kv, minute + 60_000)).queue.count).toBe(0);
    } finally {
      await store.close();
    }
  });
});
