// Several replicas on one Redis: the unchanged engine over the Redis store.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import type { RedisStore } from "../../src/store/redis/store.js";
import { defineHandler, type HandlerModule } from "../../src/handler.js";
import { deliveryOf, examplePayload, testEngine, waitFor } from "../engine/helpers.js";
import { redisStores, redisUp, redisUrl } from "./support.js";

let stores: ReturnType<typeof redisStores>;
let engines: Engine[];

beforeEach(() => {
  stores = redisStores();
  engines = [];
});
afterEach(async () => {
  await Promise.all(engines.map((e) => e.stop(1000).catch(() => undefined)));
  await stores.dispose();
});

async function replica(
  handlers: HandlerModule<any>[],
  opts: { leaseMs?: number; concurrency?: number } = {},
): Promise<{ engine: Engine; store: RedisStore }> {
  const store = await stores.open();
  const engine = testEngine(store, handlers, {
    concurrency: opts.concurrency ?? 4,
    ...(opts.leaseMs ? { leaseMs: opts.leaseMs } : {}),
  });
  engines.push(engine);
  await engine.start();
  return { engine, store };
}

/** A handler that counts runs per delivery id and which replica ran it. */
function counting(replicaName: string, runs: Map<string, string[]>) {
  return defineHandler<unknown>({
    name: "count",
    events: ["push", "workflow_run"],
    async handle(ctx) {
      runs.set(ctx.deliveryId, [...(runs.get(ctx.deliveryId) ?? []), replicaName]);
      await new Promise((r) => setImmediate(r));
      return { status: "done" };
    },
  });
}

describe.skipIf(!redisUp)("replicas on one Redis", () => {
  it("two replicas process 500 deliveries, each exactly once", async () => {
    const runs = new Map<string, string[]>();
    const a = await replica([counting("a", runs)]);
    const b = await replica([counting("b", runs)]);
    const payload = examplePayload("workflow_run", "completed");
    const deliveries = Array.from({ length: 500 }, () => deliveryOf("workflow_run", payload));
    // The load balancer spreads deliveries over both; GitHub's redelivery of some lands on the other one.
    const results = await Promise.all(deliveries.map((d, i) => (i % 2 ? a : b).engine.intake.record(d)));
    const redelivered = await Promise.all(
      deliveries.slice(0, 50).map((d, i) => (i % 2 ? b : a).engine.intake.record(d)),
    );
    expect(results.every((r) => r === "recorded")).toBe(true);
    expect(redelivered.every((r) => r === "duplicate")).toBe(true);
    await waitFor(() => runs.size === 500, 20_000);
    await Promise.all([a.engine.idle(), b.engine.idle()]);
    expect([...runs.values()].every((who) => who.length === 1)).toBe(true);
    const byReplica = [...runs.values()].flat();
    expect(byReplica.filter((r) => r === "a").length).toBeGreaterThan(0);
    expect(byReplica.filter((r) => r === "b").length).toBeGreaterThan(0);
    const done = await a.store.deliveries.listDeliveries({ status: "done", limit: 1000 });
    expect(done).toHaveLength(500);
    expect(await b.store.deliveries.depth()).toBe(0);
  });

  it("a replica that stops renewing its lease (it died) loses the delivery to another", async () => {
    let release!: () => void;
    const hung = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const stuck = defineHandler<unknown>({
      name: "work",
      events: ["push"],
      async handle(ctx) {
        started.push(`dying:${ctx.attempt}`);
        await hung;
      },
    });
    const finished: string[] = [];
    const healthy = defineHandler<unknown>({
      name: "work",
      events: ["push"],
      async handle(ctx) {
        finished.push(`healthy:${ctx.deliveryId}:${ctx.attempt}`);
      },
    });
    const dying = await replica([stuck], { leaseMs: 300 });
    const d = deliveryOf("push", examplePayload("push"));
    await dying.engine.intake.record(d);
    await waitFor(() => started.length === 1);
    // The replica's Redis connection goes away: it can neither renew nor finish.
    await dying.store.close();
    const other = await replica([healthy]);
    await waitFor(() => finished.length === 1);
    // Handler attempt 1: the dead replica never recorded an outcome; the delivery counts both runs.
    expect(finished).toEqual([`healthy:${d.id}:1`]);
    await other.engine.idle();
    const shown = await other.store.deliveries.getDelivery(d.id);
    expect(shown?.delivery).toMatchObject({ status: "done", attempts: 2 });
    release();
  });

  it("work leased by a killed process on this host is taken back at start, before its lease expires", async () => {
    const seed = await stores.open();
    const d = deliveryOf("push", examplePayload("push"));
    await seed.deliveries.record(d);
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(import.meta.dirname, "fixtures", "lease-holder.ts"), redisUrl, stores.prefix],
      {
        cwd: join(import.meta.dirname, "..", ".."),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const exited = new Promise((r) => child.once("exit", r));
    const out = await new Promise<string>((resolve, reject) => {
      let text = "";
      child.stdout.on("data", (c: Buffer) => {
        text += c.toString();
        if (text.includes("\n")) {
          child.kill("SIGKILL");
          resolve(text);
        }
      });
      child.on("exit", (code, signal) => {
        if (signal !== "SIGKILL") reject(new Error(`lease holder exited ${code}`));
      });
    });
    expect(out.trim()).toBe(`claimed ${d.id}`);
    await exited;
    expect((await seed.deliveries.getDelivery(d.id))?.delivery.status).toBe("running");
    const runs = new Map<string, string[]>();
    const b = await replica([counting("b", runs)]);
    await waitFor(() => runs.size === 1);
    await b.engine.idle();
    expect(runs.get(d.id)).toEqual(["b"]);
    expect((await seed.deliveries.getDelivery(d.id))?.delivery).toMatchObject({ status: "done", attempts: 2 });
  });

  it("a task scheduled on two replicas under one key runs once, on one of them", async () => {
    const ran: string[] = [];
    const tick = (who: string) =>
      defineHandler<unknown>({
        name: "tick",
        events: [],
        async handle() {},
        async onTask(ctx) {
          ran.push(`${who}:${String(ctx.data)}`);
        },
      });
    const a = await replica([tick("a")]);
    const b = await replica([tick("b")]);
    // Not due before the listing below, which must see the one task still pending.
    const runAt = new Date(Date.now() + 10_000);
    await Promise.all([
      a.engine.schedulerFor("tick").schedule({ key: "sync:org", runAt, data: "from-a" }),
      b.engine.schedulerFor("tick").schedule({ key: "sync:org", runAt, data: "from-b" }),
    ]);
    expect(await a.store.tasks.listTasks()).toHaveLength(1);
    await waitFor(() => ran.length === 1);
    await Promise.all([a.engine.idle(), b.engine.idle()]);
    expect(ran).toHaveLength(1);
    expect(await b.store.tasks.listTasks()).toEqual([]);
  });

  it("a kv claim is won by exactly one of many concurrent callers across replicas", async () => {
    const replicas = await Promise.all([stores.open(), stores.open(), stores.open()]);
    for (let round = 0; round < 5; round++) {
      const key = `rerun:run-${round}`;
      const attempts = Array.from({ length: 60 }, (_, i) =>
        replicas[i % 3]!.kv.claim(key, { ttlMs: 60_000, value: i }),
      );
      const won = (await Promise.all(attempts)).filter(Boolean);
      expect(won).toHaveLength(1);
    }
    expect((await replicas[0]!.kv.list("rerun:")).map((e) => e.key)).toHaveLength(5);
  });
});
