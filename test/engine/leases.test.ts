// Lease keeping (src/engine/leases.ts) through the engine over a real SQLite store: a run's
// lease is renewed for as long as it runs, a run whose lease another worker took is told to stop
// and records nothing, and a shutdown tells every running run to stop.
import { describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { defineHandler } from "../../src/handler.js";
import { deliveryOf, examplePayload, testEngine } from "./helpers.js";
import { sqliteStorePerTest } from "./scratch-store.js";

const scratch = sqliteStorePerTest();
// Long enough that a loaded machine never lets a kept lease lapse between beats (a third of it).
const LEASE_MS = 1_500;

/** A handler that runs until its signal fires or `release` is called, telling `runs` each start. */
function waiting() {
  let started!: () => void;
  const state = {
    runs: 0,
    reasons: [] as string[],
    release: () => undefined as void,
    started: new Promise<void>((r) => (started = r)),
  };
  const released = new Promise<void>((r) => (state.release = r));
  const handler = defineHandler<unknown>({
    name: "waits",
    events: ["push"],
    async handle(ctx) {
      state.runs++;
      started();
      const stopped = new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r(), { once: true }));
      await Promise.race([released, stopped]);
      if (ctx.signal.aborted) state.reasons.push(String((ctx.signal.reason as Error)?.message ?? ctx.signal.reason));
      return { status: "done", summary: ctx.signal.aborted ? "stopped" : "released" };
    },
  });
  return { state, handler };
}

describe("lease keeping", { timeout: 60_000 }, () => {
  it("renews a running run's lease past its length: nobody else claims it, and it finishes done", async () => {
    const { state, handler } = waiting();
    const engine = (scratch.engine = testEngine(scratch.store, [handler], { leaseMs: LEASE_MS, concurrency: 2 }));
    await engine.start();
    const d = deliveryOf("push", examplePayload("push"));
    await engine.intake.record(d);
    await state.started;
    const leaseUntil = () => {
      const db = new Database(scratch.store.path, { readonly: true });
      try {
        return db.prepare("SELECT lease_until FROM deliveries WHERE id = ?").pluck().get(d.id) as number;
      } finally {
        db.close();
      }
    };
    const first = leaseUntil();
    // Past the first lease's end, renewed: the lease ends later than it first did.
    await expect
      .poll(() => Date.now() > first + LEASE_MS && leaseUntil() > first, { timeout: 20_000, interval: 50 })
      .toBe(true);
    const idle = engine.idle();
    state.release();
    await idle;
    expect(state.runs).toBe(1);
    expect(state.reasons).toEqual([]);
    expect((await scratch.store.deliveries.getDelivery(d.id))?.delivery.status).toBe("done");
  });

  it("tells a run whose lease was taken to stop, and records nothing of it", async () => {
    const { state, handler } = waiting();
    const engine = (scratch.engine = testEngine(scratch.store, [handler], { leaseMs: LEASE_MS }));
    await engine.start();
    const d = deliveryOf("push", examplePayload("push"));
    await engine.intake.record(d);
    await state.started;
    // Another worker's claim, as after this process stalled past the lease.
    const db = new Database(scratch.store.path);
    db.prepare("UPDATE deliveries SET lease_token = 'another-worker' WHERE id = ?").run(d.id);
    db.close();
    await expect.poll(() => state.reasons, { timeout: 20_000, interval: 20 }).toEqual(["lease lost"]);
    // The run's outcome was not written: the delivery stays with the worker that holds it.
    const got = await scratch.store.deliveries.getDelivery(d.id);
    expect(got?.delivery.status).toBe("running");
    expect(got?.outcomes).toEqual([]);
  });

  it("tells every running run to stop when shutdown begins", async () => {
    const { state, handler } = waiting();
    const engine = testEngine(scratch.store, [handler], { leaseMs: 60_000, concurrency: 3 });
    await engine.start();
    for (let i = 0; i < 3; i++) await engine.intake.record(deliveryOf("push", examplePayload("push")));
    await expect.poll(() => state.runs, { timeout: 20_000, interval: 20 }).toBe(3);
    await engine.stop(5_000);
    expect(state.reasons).toHaveLength(3);
  });
});
