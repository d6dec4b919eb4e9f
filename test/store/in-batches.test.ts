// Batched housekeeping: every batch until one comes back short, with the event loop's other work between batches.
import { describe, expect, it } from "vitest";
import { inBatches } from "../../src/store/sqlite/in-batches.js";

describe("inBatches", () => {
  it("runs batches until one removes fewer than the limit, letting other work run between them", async () => {
    let left = 25;
    const order: string[] = [];
    const done = inBatches((limit) => {
      const n = Math.min(limit, left);
      left -= n;
      order.push(`batch ${n}`);
      return n;
    }, 10);
    setImmediate(() => order.push("other work"));
    expect(await done).toBe(25);
    // The first yield was queued before the other work (setImmediate runs in order): it runs before
    // the last batch, not after the whole purge.
    expect(order).toEqual(["batch 10", "batch 10", "other work", "batch 5"]);
  });
});
