// The engine's side of the intake (src/engine/enqueue.ts): a delivery no handler takes (a job
// queued or in progress, a check run created, an event only another app wants) is recorded done at
// once and never queued, claimed or run, on either store; one a handler takes is queued and run.
// Replay and the retention purge treat it as any finished delivery.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineHandler } from "../../src/handler.js";
import type { StewardStore } from "../../src/store/contract.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import type { Engine } from "../../src/engine/index.js";
import { deliveryOf, examplePayload, fakePolicies, tempDir, testEngine } from "./helpers.js";
import { redisStores, redisUp } from "../redis/support.js";

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
async function settledAndRun(store: StewardStore, engine: Engine, ran: string[]) {
  const taken = [
    deliveryOf("push", examplePayload("push")),
    deliveryOf("workflow_job", examplePayload("workflow_job", "completed")),
  ];
  const untaken = [
    deliveryOf("issues", examplePayload("issues", "opened")),
    deliveryOf("workflow_job", examplePayload("workflow_job", "in_progress")),
  ];
  for (const d of [untaken[0]!, taken[0]!, untaken[1]!, taken[1]!]) {
    expect(await engine.intake.record(d)).toBe("recorded");
  }
  // Redelivered: still a duplicate, settled or not.
  for (const d of [...taken, ...untaken])
    expect(await engine.intake.record({ ...d, settled: undefined })).toBe("duplicate");
  await engine.idle();
  expect(ran.sort()).toEqual(taken.map((d) => d.id).sort());
  for (const d of untaken) {
    const got = await store.deliveries.getDelivery(d.id);
    expect(got?.delivery).toMatchObject({ id: d.id, status: "done", attempts: 0, event: d.event, action: d.action });
    expect(got?.outcomes).toEqual([]);
    expect(got?.delivery.payload).toBe(d.payload);
  }
  for (const d of taken)
    expect((await store.deliveries.getDelivery(d.id))?.delivery).toMatchObject({ status: "done", attempts: 1 });
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

  it("are recorded done at once on SQLite, and never claimed or run", async () => {
    const { ran, handler } = pushCounter();
    store = openSqliteStore(dir);
    engine = testEngine(store, [handler]);
    await engine.start();
    await settledAndRun(store, engine, ran);
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
    engine = testEngine(
      store,
      [pushCounter().handler].map((h) => ({ ...h, events: ["workflow_job.completed"] as const })),
      { policies },
    );
    await engine.start();
    const plain = deliveryOf("push", examplePayload("push"));
    const payload = examplePayload("push");
    payload.commits = [
      { id: "1".repeat(40), message: "policy", added: [], removed: [], modified: [".github/steward.yml"] },
    ];
    const touching = deliveryOf("push", payload);
    for (const d of [plain, touching]) expect(await engine.intake.record(d)).toBe("recorded");
    await engine.idle();
    expect(policies.invalidated).toEqual([`${payload.repository.owner.login}/${payload.repository.name}`]);
    expect((await store.deliveries.getDelivery(plain.id))?.delivery).toMatchObject({ status: "done", attempts: 0 });
    expect((await store.deliveries.getDelivery(touching.id))?.delivery).toMatchObject({ status: "done", attempts: 1 });
    expect((await store.deliveries.getDelivery(touching.id))?.outcomes).toEqual([]);
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
