import { describe, expect, it } from "vitest";
import { setTimeout as delay } from "node:timers/promises";
import { defineHandler } from "../../src/handler.js";
import type { SqliteStore } from "../../src/store/sqlite/store.js";
import { deliveryOf, examplePayload, testEngine } from "./helpers.js";
import { sqliteStorePerTest } from "./scratch-store.js";

const scratch = sqliteStorePerTest();

/**
 * The real store, answering "is anything pending?" only after `ms`, as a store across the network
 * (Redis) does: the pool's own retry timer can fire while the pump still waits for that answer.
 */
function slowPendingWork(store: SqliteStore, ms: number): SqliteStore {
  const leases = Object.create(store.leases) as SqliteStore["leases"];
  leases.pendingWork = async (now) => {
    await delay(ms);
    return store.leases.pendingWork(now);
  };
  return Object.assign(Object.create(store) as SqliteStore, { leases });
}

describe("worker pool", () => {
  it("claims a retry whose timer fired while the pump was still asking whether work is pending", async () => {
    let attempts = 0;
    const flaky = defineHandler<unknown>({
      name: "flaky",
      events: ["push"],
      async handle() {
        attempts++;
        return attempts === 1
          ? { status: "failed", error: "first attempt fails" }
          : { status: "done", summary: "second attempt" };
      },
    });
    // Retries are due 5–20 ms after a failure; the pending-work answer takes 100 ms, so the pool's
    // retry timer fires inside it. That wake-up must not be dropped.
    const engine = (scratch.engine = testEngine(slowPendingWork(scratch.store, 100), [flaky], { maxAttempts: 3 }));
    await engine.start();
    const d = deliveryOf("push", examplePayload("push"));
    const idle = engine.idle();
    expect(await engine.intake.record(d)).toBe("recorded");
    await idle;
    expect(attempts).toBe(2);
    expect((await scratch.store.deliveries.getDelivery(d.id))?.delivery.status).toBe("done");
  });
});
