// The engine's intake (src/engine/intake.ts): a delivery no handler takes (a job queued or in
// progress, a check run created, an event only another app wants) is recorded done at once and
// never queued, claimed or run, on either store and through the spool during a flood; one a
// handler takes is queued and run as before. Replay and the retention purge treat it as any
// finished delivery.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineHandler } from "../../src/handler.js";
import type { StewardStore } from "../../src/store/contract.js";
import type { SqliteDeliveries } from "../../src/store/sqlite/deliveries.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { createIntakeFirst, DEFAULT_INTAKE_FIRST } from "../../src/engine/intake-first.js";
import { decodeFrames, encodeFrame } from "../../src/store/sqlite/spool.js";
import type { Engine } from "../../src/engine/index.js";
import { deliveryOf, examplePayload, fakePolicies, tempDir, testEngine } from "./helpers.js";
import { redisStores, redisUp } from "../redis/support.js";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function pushCounter() {
  const ran: string[] = [];
  const handler = defineHandler<unknown>({
    name: "pushes",
    events: ["push", "workflow_job.completed"],
    async handle(ctx) {
      ran.push(ctx.deliveryId);
      return { status: "done", summary: "ran" };
    },
  });
  return { ran, handler };
}

/** Records a mix through the engine and checks what became of each delivery. */
async function settledAndRun(store: StewardStore, engine: Engine, ran: string[], between: () => Promise<void> = async () => undefined) {
  const taken = [deliveryOf("push", examplePayload("push")), deliveryOf("workflow_job", examplePayload("workflow_job", "completed"))];
  const untaken = [deliveryOf("issues", examplePayload("issues", "opened")), deliveryOf("workflow_job", examplePayload("workflow_job", "in_progress"))];
  for (const d of [untaken[0]!, taken[0]!, untaken[1]!, taken[1]!]) {
    expect(await engine.intake.record(d)).toBe("recorded");
    await between();
  }
  // Redelivered: still a duplicate, settled or not.
  for (const d of [...taken, ...untaken]) expect(await engine.intake.record({ ...d, settled: undefined })).toBe("duplicate");
  await engine.idle();
  expect(ran.sort()).toEqual(taken.map((d) => d.id).sort());
  for (const d of untaken) {
    const got = await store.deliveries.getDelivery(d.id);
    expect(got?.delivery).toMatchObject({ id: d.id, status: "done", attempts: 0, event: d.event, action: d.action });
    expect(got?.outcomes).toEqual([]);
    expect(got?.delivery.payload).toBe(d.payload);
  }
  for (const d of taken) expect((await store.deliveries.getDelivery(d.id))?.delivery).toMatchObject({ status: "done", attempts: 1 });
  expect(await store.deliveries.depth()).toBe(0);
  // Replayed like any finished delivery: queued, claimed and finished again (no handler takes it).
  expect(await store.deliveries.replayDelivery(untaken[0]!.id)).toBe(true);
  await waitUntil(async () => {
    const again = (await store.deliveries.getDelivery(untaken[0]!.id))?.delivery;
    return again?.attempts === 1 && again.status === "done";
  });
  // And purged with the finished ones.
  expect(await store.deliveries.purgeFinished(new Date(Date.now() + 60_000))).toBe(4);
  return { taken, untaken };
}

async function waitUntil(condition: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("condition never held");
}

describe("deliveries no handler takes", { timeout: 60_000 }, () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let engine: Engine | undefined;
  let store: StewardStore | undefined;
  beforeEach(async () => ({ dir, cleanup } = await tempDir()));
  afterEach(async () => {
    await engine?.stop(1_000);
    await store?.close();
    engine = store = undefined;
    await cleanup();
  });

  /** An engine over a spooled SQLite store, started and then put in a flood (the pool yields to the intake). */
  async function startedInAFlood(overrides: { pollMs?: number } = {}) {
    const { ran, handler } = pushCounter();
    store = openSqliteStore(dir, { spool: true });
    const intakeFirst = createIntakeFirst({ ...DEFAULT_INTAKE_FIRST, share: 0.5, enterArrivals: 1, leaveArrivals: 1 }, { sampleMs: 3_600_000, measure: () => 1 });
    engine = testEngine(store, [handler], { intakeFirst, ...overrides });
    await engine.start();
    await engine.idle();
    intakeFirst.arrived();
    intakeFirst.sample();
    expect(intakeFirst.yielding()).toBe(true);
    return { ran, store, engine, d: store.deliveries as SqliteDeliveries };
  }

  it("are recorded done at once on SQLite, and never claimed or run", async () => {
    const { ran, handler } = pushCounter();
    store = openSqliteStore(dir);
    engine = testEngine(store, [handler]);
    await engine.start();
    await settledAndRun(store, engine, ran);
  });

  it("go through the spool outside a flood too (nobody waits for their row), where a delivery a handler takes does not", async () => {
    const { ran, handler } = pushCounter();
    store = openSqliteStore(dir, { spool: true });
    engine = testEngine(store, [handler]);
    await engine.start();
    const d = store.deliveries as SqliteDeliveries;
    await nextTurn();
    expect(await engine.intake.record(deliveryOf("push", examplePayload("push")))).toBe("recorded");
    expect(d.spooled).toBe(0);
    await nextTurn();
    const untaken = deliveryOf("check_run", examplePayload("check_run", "created"));
    expect(await engine.intake.record(untaken)).toBe("recorded");
    expect(d.spooled).toBe(1);
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    expect((await d.getDelivery(untaken.id))?.delivery).toMatchObject({ status: "done", attempts: 0 });
    await engine.idle();
    expect(ran).toHaveLength(1);
  });

  it("moved in from the spool wake the pool only when the move holds work: settled ones cost no claim round", async () => {
    // No poll within the test: only a wake makes the pool claim.
    const { ran, engine, d } = await startedInAFlood({ pollMs: 600_000 });
    let claims = 0;
    const claim = d.claimDeliveries.bind(d);
    d.claimDeliveries = (leaseMs, max) => {
      claims++;
      return claim(leaseMs, max);
    };
    const moves: number[] = [];
    d.onMoved((queued) => moves.push(queued));
    const untaken = [deliveryOf("issues", examplePayload("issues", "opened")), deliveryOf("check_run", examplePayload("check_run", "created")), deliveryOf("workflow_job", examplePayload("workflow_job", "in_progress"))];
    for (const u of untaken) {
      expect(await engine.intake.record(u)).toBe("recorded");
      await nextTurn();
    }
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    await nextTurn();
    expect(moves.length).toBeGreaterThan(0);
    expect(moves.every((n) => n === 0)).toBe(true);
    expect(claims).toBe(0);
    for (const u of untaken) expect((await d.getDelivery(u.id))?.delivery).toMatchObject({ status: "done", attempts: 0 });
    // A move holding a delivery a handler takes wakes the pool, which claims and runs it (spooled
    // straight into the store: the intake would hand it to the idle pool at once).
    const taken = deliveryOf("push", examplePayload("push"));
    expect(await d.recordSpooled(taken)).toBe("recorded");
    await waitUntil(async () => ran.includes(taken.id));
    expect(moves.at(-1)).toBe(1);
    expect(claims).toBeGreaterThan(0);
  });

  it("include those every handler of their event narrows out (its `takes`), judged from the repository the intake read", async () => {
    const ran: string[] = [];
    const handler = defineHandler<unknown>({
      name: "acme-pushes",
      events: ["push"],
      takes: (d) => d.repository === "acme/web",
      async handle(ctx) {
        ran.push(ctx.deliveryId);
        return { status: "done", summary: "ran" };
      },
    });
    store = openSqliteStore(dir);
    engine = testEngine(store, [handler]);
    await engine.start();
    const elsewhere = deliveryOf("push", examplePayload("push"));
    const payload = examplePayload("push");
    payload.repository.full_name = "acme/web";
    const ours = deliveryOf("push", payload);
    for (const d of [elsewhere, ours]) expect(await engine.intake.record(d)).toBe("recorded");
    await engine.idle();
    expect(ran).toEqual([ours.id]);
    expect((await store.deliveries.getDelivery(elsewhere.id))?.delivery).toMatchObject({ status: "done", attempts: 0 });
    expect((await store.deliveries.getDelivery(elsewhere.id))?.outcomes).toEqual([]);
    expect((await store.deliveries.getDelivery(ours.id))?.delivery).toMatchObject({ status: "done", attempts: 1 });
  });

  it("exclude a push that may touch a policy file: the engine runs it to drop the cached policy, though no handler takes pushes", async () => {
    const policies = fakePolicies();
    store = openSqliteStore(dir);
    engine = testEngine(store, [pushCounter().handler].map((h) => ({ ...h, events: ["workflow_job.completed"] as const })), { policies });
    await engine.start();
    const plain = deliveryOf("push", examplePayload("push"));
    const payload = examplePayload("push");
    payload.commits = [{ id: "1".repeat(40), message: "policy", added: [], removed: [], modified: [".github/steward.yml"] }];
    const touching = deliveryOf("push", payload);
    for (const d of [plain, touching]) expect(await engine.intake.record(d)).toBe("recorded");
    await engine.idle();
    expect(policies.invalidated).toEqual([`${payload.repository.owner.login}/${payload.repository.name}`]);
    expect((await store.deliveries.getDelivery(plain.id))?.delivery).toMatchObject({ status: "done", attempts: 0 });
    expect((await store.deliveries.getDelivery(touching.id))?.delivery).toMatchObject({ status: "done", attempts: 1 });
    expect((await store.deliveries.getDelivery(touching.id))?.outcomes).toEqual([]);
  });

  it("go through the spool during a flood, recorded done, and stay done after a crash leaves their frames", async () => {
    const { ran, store, engine, d } = await startedInAFlood();
    let spooled = 0;
    await settledAndRun(store, engine, ran, async () => {
      spooled = Math.max(spooled, d.spooled);
      await nextTurn();
    });
    expect(spooled).toBeGreaterThan(0);
    // A frame a crash leaves is moved in as it was recorded: done, not queued.
    const settled = { ...deliveryOf("issues", examplePayload("issues", "opened")), settled: true };
    const [frame] = decodeFrames(encodeFrame(7, settled));
    expect(frame?.delivery).toMatchObject({ id: settled.id, settled: true, payload: settled.payload });
    expect(decodeFrames(encodeFrame(8, { ...settled, settled: undefined }))[0]?.delivery.settled).toBeUndefined();
  });
});

describe.skipIf(!redisUp)("deliveries no handler takes, on Redis", { timeout: 60_000 }, () => {
  let stores: ReturnType<typeof redisStores>;
  let engine: Engine | undefined;
  beforeEach(() => (stores = redisStores()));
  afterEach(async () => {
    await engine?.stop(1_000);
    engine = undefined;
    await stores.dispose();
  });

  it("are recorded done at once, never claimed or run, and purged with the finished ones", async () => {
    const { ran, handler } = pushCounter();
    const store = await stores.open();
    engine = testEngine(store, [handler]);
    await engine.start();
    await settledAndRun(store, engine, ran);
  });
});

describe("the intake's failures", { timeout: 60_000 }, () => {
  it("reach the caller as a rejected promise, never as a throw: a closed store", async () => {
    const { dir, cleanup } = await tempDir();
    const store = openSqliteStore(dir);
    const { handler } = pushCounter();
    const engine = testEngine(store, [handler]);
    try {
      await engine.start();
      await engine.stop(1_000);
      await store.close();
      const closed = engine.intake.record(deliveryOf("push", examplePayload("push")));
      await expect(closed).rejects.toThrow("store is closed");
    } finally {
      await engine.stop(1_000);
      await store.close();
      await cleanup();
    }
  });
});
