import { describe, expect, it, vi } from "vitest";
import { setTimeout as delay } from "node:timers/promises";
import { defineHandler } from "../../src/handler.js";
import { createIntakeFirst, DEFAULT_INTAKE_FIRST, nextState, pauseAfter } from "../../src/engine/intake-first.js";
import { deliveryOf, examplePayload, testEngine } from "./helpers.js";
import { sqliteStorePerTest } from "./scratch-store.js";

// The rule with a floor of 10%, so that halving and doubling show (the default floor is 1%).
const s = { ...DEFAULT_INTAKE_FIRST, share: 0.1 };

describe("intake first: the decision", () => {
  const calm = { yielding: false, share: s.share };
  const at = (share: number) => ({ yielding: true, share });

  it("steps back only when the loop is mostly busy while deliveries arrive", () => {
    expect(nextState(calm, { utilisation: 0.95, arrivals: 40 }, s)).toEqual(at(s.share));
    // One sender waiting for each answer: the loop never saturates, yet answers wait behind runs.
    expect(nextState(calm, { utilisation: 0.75, arrivals: 200 }, s)).toEqual(at(s.share));
    expect(nextState(calm, { utilisation: 0.65, arrivals: 200 }, s)).toEqual(calm);
    expect(nextState(calm, { utilisation: 0.95, arrivals: 0 }, s)).toEqual(calm); // busy with its own work: no one to make room for
    expect(nextState(calm, { utilisation: 0.6, arrivals: 40 }, s)).toEqual(calm); // arrivals the loop can take
    // The loop busy with the pool's own work (a log matched) while deliveries trickle in: no flood.
    expect(nextState(calm, { utilisation: 1, arrivals: 2 }, s)).toEqual(calm);
  });

  it("keeps stepping back while the flood lasts, and lets go when it ends", () => {
    expect(nextState(at(0.1), { utilisation: 0.6, arrivals: 40 }, s)).toEqual(at(0.1));
    expect(nextState(at(0.1), { utilisation: 1, arrivals: 10 }, s)).toEqual(at(0.1)); // fewer, but still a flood
    expect(nextState(at(0.1), { utilisation: 1, arrivals: 0 }, s)).toEqual(calm);
    expect(nextState(at(0.4), { utilisation: 1, arrivals: 4 }, s)).toEqual(calm); // a trickle again
  });

  it("gives the pool more of a loop with room and takes it back when the loop is saturated again (no flapping)", () => {
    // The loop quieter because the pool holds back is not the end of the flood: a larger share, still yielding.
    expect(nextState(at(0.1), { utilisation: 0.4, arrivals: 80 }, s)).toEqual(at(0.2));
    expect(nextState(at(0.2), { utilisation: 0.3, arrivals: 80 }, s)).toEqual(at(0.4));
    expect(nextState(at(0.4), { utilisation: 0.95, arrivals: 80 }, s)).toEqual(at(0.2));
    expect(nextState(at(0.1), { utilisation: 0.95, arrivals: 80 }, s)).toEqual(at(0.1)); // never below the setting
    // A loop with room even at a share past a half: the intake is not what fills it; the pool runs freely.
    expect(nextState(at(0.8), { utilisation: 0.3, arrivals: 80 }, s)).toEqual(calm);
  });

  it("never steps back with a share of 100%", () => {
    expect(nextState(calm, { utilisation: 1, arrivals: 1000 }, { ...s, share: 1 })).toEqual({ yielding: false, share: 1 });
  });

  it("pauses after a run so runs keep their share of the time", () => {
    expect(pauseAfter(2, 0.1)).toBeCloseTo(18);
    expect(pauseAfter(10, 0.5)).toBe(10);
    expect(pauseAfter(3, 1)).toBe(0);
    expect(pauseAfter(-1, 0.1)).toBe(0); // a clock step backwards is no run time
  });

  it("tells listeners of each change, and forgets the pause once it lets go", () => {
    let load = { utilisation: 1 };
    const first = createIntakeFirst({ ...s, share: 0.25, enterArrivals: 1, leaveArrivals: 1 }, { measure: () => load.utilisation });
    const changes: boolean[] = [];
    first.onChange((y) => changes.push(y));
    first.arrived();
    first.sample();
    expect(first.yielding()).toBe(true);
    first.ran(10, 1_000);
    expect(first.launchDelay(1_000)).toBe(30);
    expect(first.launchDelay(1_020)).toBe(10);
    first.sample(); // no arrival since the last sample
    expect(first.yielding()).toBe(false);
    expect(first.launchDelay(1_000)).toBe(0);
    load = { utilisation: 0.2 };
    first.arrived();
    first.sample();
    expect(changes).toEqual([true, false]);
  });
});

/**
 * A handler that returns at once, and the rule at a 20% floor (sampled only when a test says so)
 * with each run's paced time, as the pool reports it, recorded in `ran`.
 */
function pacedQuickRuns() {
  const handler = defineHandler<unknown>({ name: "quick", events: ["push"], handle: async () => ({ status: "done", summary: "ran" }) });
  const intakeFirst = createIntakeFirst({ ...s, share: 0.2, enterArrivals: 1, leaveArrivals: 1 }, { sampleMs: 3_600_000, measure: () => 1 });
  const ran: number[] = [];
  const measured = { ...intakeFirst, ran: (ms: number, now: number) => (ran.push(ms), intakeFirst.ran(ms, now)) };
  return { handler, intakeFirst, measured, ran };
}

describe("intake first: the worker pool", () => {
  const scratch = sqliteStorePerTest();

  it("runs one delivery at a time, paced to its share, while the intake comes first; all of them; then full speed again", async () => {
    let inflight = 0;
    let most = 0;
    const starts: number[] = [];
    let gate: Promise<void> | undefined;
    const handler = defineHandler<unknown>({
      name: "counted",
      events: ["push"],
      async handle() {
        starts.push(Date.now());
        inflight++;
        most = Math.max(most, inflight);
        await (gate ?? delay(5));
        inflight--;
        return { status: "done", summary: "ran" };
      },
    });
    // Sampled only when the test says so: the decision is the test's, the pool's answer to it is real.
    const intakeFirst = createIntakeFirst({ ...s, share: 0.2, enterArrivals: 1, leaveArrivals: 1 }, { sampleMs: 3_600_000, measure: () => 1 });
    const engine = (scratch.engine = testEngine(scratch.store, [handler], { concurrency: 4, intakeFirst }));
    await engine.start();

    intakeFirst.arrived();
    intakeFirst.sample();
    expect(intakeFirst.yielding()).toBe(true);
    const flood = Array.from({ length: 8 }, () => deliveryOf("push", examplePayload("push")));
    for (const d of flood) expect(await engine.intake.record(d)).toBe("recorded");
    await engine.idle();
    expect(starts).toHaveLength(8);
    expect(most).toBe(1);
    // Share 0.2: after a run of at least 5 ms the next waits at least four times as long.
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(24);
    for (const d of flood) expect((await scratch.store.deliveries.getDelivery(d.id))?.delivery.status).toBe("done");

    // The flood is over (a sample without arrivals): four at once again, woken without a new delivery.
    let release!: () => void;
    gate = new Promise((r) => (release = r));
    intakeFirst.arrived();
    intakeFirst.sample(); // still flooding: these queue
    const later = Array.from({ length: 4 }, () => deliveryOf("push", examplePayload("push")));
    for (const d of later) await engine.intake.record(d);
    intakeFirst.sample(); // their arrivals: still flooding
    expect(intakeFirst.yielding()).toBe(true);
    intakeFirst.sample();
    expect(intakeFirst.yielding()).toBe(false);
    await vi.waitFor(() => expect(inflight).toBe(4), { timeout: 20_000, interval: 10 });
    release();
    await engine.idle();
    expect(starts).toHaveLength(12);
  });

  it("paces by each run's time measured below a millisecond: a run shorter than one still pauses the next", async () => {
    const { handler, intakeFirst, measured, ran } = pacedQuickRuns();
    const engine = (scratch.engine = testEngine(scratch.store, [handler], { concurrency: 2, intakeFirst: measured }));
    await engine.start();
    intakeFirst.arrived();
    intakeFirst.sample();
    for (let i = 0; i < 6; i++) expect(await engine.intake.record(deliveryOf("push", examplePayload("push")))).toBe("recorded");
    await engine.idle();
    expect(ran).toHaveLength(6);
    // Whole milliseconds (Date.now) read a run of a fraction of one as 0 ms: no pause, no share kept.
    expect(ran.every((ms) => ms > 0)).toBe(true);
    expect(ran.some((ms) => !Number.isInteger(ms))).toBe(true);
  });

  it("counts each run's claim in the pause that keeps the pool to its share", async () => {
    const { handler, intakeFirst, measured, ran } = pacedQuickRuns();
    // A claim that takes a while, as one does during a flood (its pages read again after the spool's moves).
    const deliveries = scratch.store.deliveries;
    const claim = deliveries.claimDeliveries.bind(deliveries);
    deliveries.claimDeliveries = async (...args) => {
      await delay(15);
      return claim(...args);
    };
    const engine = (scratch.engine = testEngine(scratch.store, [handler], { concurrency: 1, intakeFirst: measured }));
    await engine.start();
    intakeFirst.arrived();
    intakeFirst.sample();
    for (let i = 0; i < 3; i++) expect(await engine.intake.record(deliveryOf("push", examplePayload("push")))).toBe("recorded");
    await engine.idle();
    expect(ran).toHaveLength(3);
    // The handler itself takes well under a millisecond; the claim's 15 ms are the run's too.
    expect(ran.every((ms) => ms >= 14)).toBe(true);
  });

  it("runs more at once as its share grows while the loop has room", async () => {
    let inflight = 0;
    let most = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const handler = defineHandler<unknown>({
      name: "held",
      events: ["push"],
      async handle() {
        inflight++;
        most = Math.max(most, inflight);
        await gate;
        inflight--;
        return { status: "done", summary: "ran" };
      },
    });
    let utilisation = 1;
    const intakeFirst = createIntakeFirst({ ...s, share: 0.25, enterArrivals: 1, leaveArrivals: 1 }, { sampleMs: 3_600_000, measure: () => utilisation });
    const engine = (scratch.engine = testEngine(scratch.store, [handler], { concurrency: 8, intakeFirst }));
    await engine.start();
    intakeFirst.arrived();
    intakeFirst.sample();
    expect([intakeFirst.yielding(), intakeFirst.share()]).toEqual([true, 0.25]);
    for (let i = 0; i < 8; i++) await engine.intake.record(deliveryOf("push", examplePayload("push")));
    // A quarter of eight: two at once.
    await vi.waitFor(() => expect(inflight).toBe(2), { timeout: 20_000, interval: 10 });
    await delay(50);
    expect(most).toBe(2);
    // Still a flood, but the loop has room: half the loop, four at once, without a new delivery.
    utilisation = 0.3;
    intakeFirst.arrived();
    intakeFirst.sample();
    expect([intakeFirst.yielding(), intakeFirst.share()]).toEqual([true, 0.5]);
    await engine.intake.record(deliveryOf("push", examplePayload("push"))); // the arrival the sample counted
    await vi.waitFor(() => expect(inflight).toBe(4), { timeout: 20_000, interval: 10 });
    await delay(50);
    expect(most).toBe(4);
    release();
    await engine.idle();
  });

  it("with a share of 100% the pool never steps back", async () => {
    const intakeFirst = createIntakeFirst({ ...s, share: 1, enterArrivals: 1 }, { sampleMs: 3_600_000, measure: () => 1 });
    const engine = (scratch.engine = testEngine(scratch.store, [], { intakeFirst }));
    await engine.start();
    intakeFirst.arrived();
    intakeFirst.sample();
    expect(intakeFirst.yielding()).toBe(false);
  });
});
