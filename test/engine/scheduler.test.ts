import { describe, expect, it } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import { defineHandler, type HandlerModule, type TaskContext } from "../../src/handler.js";
import { deliveryOf, examplePayload, testEngine, waitFor } from "./helpers.js";
import { sqliteStorePerTest } from "./scratch-store.js";

const scratch = sqliteStorePerTest();

function start(handlers: HandlerModule<any>[], maxAttempts = 3): Promise<Engine> {
  const engine = (scratch.engine = testEngine(scratch.store, handlers, { maxAttempts }));
  return engine.start().then(() => engine);
}

type Run = { key: string; data: unknown; at: number; attempt: number; installationId: number | undefined };

function recorder(name: string, behave: (ctx: TaskContext, runs: Run[]) => Promise<unknown> = async () => undefined) {
  const runs: Run[] = [];
  const module = defineHandler<unknown>({
    name,
    events: [],
    async handle() {},
    async onTask(ctx) {
      runs.push({
        key: ctx.key,
        data: ctx.data,
        at: Date.now(),
        attempt: ctx.attempt,
        installationId: ctx.installationId,
      });
      await behave(ctx, runs);
    },
  });
  return { module, runs };
}

describe("scheduled tasks", () => {
  it("runs a task once its time has come, with its data and installation", async () => {
    const { module, runs } = recorder("waits");
    const e = await start([module]);
    const runAt = new Date(Date.now() + 150);
    await e.schedulerFor("waits").schedule({ key: "deploy:1", runAt, data: { env: "prod" }, installationId: 9 });
    await waitFor(() => runs.length === 1);
    expect(runs[0]!.at).toBeGreaterThanOrEqual(runAt.getTime());
    expect(runs[0]).toMatchObject({ key: "deploy:1", data: { env: "prod" }, attempt: 1, installationId: 9 });
    await e.idle();
    expect(await scratch.store.tasks.listTasks()).toEqual([]);
  });

  it("survives a scratch.store reopen: a task scheduled before a restart runs after it", async () => {
    const first = recorder("delays");
    const e1 = await start([first.module]);
    // Due well after the stop below, so it cannot run before it even on a loaded machine.
    await e1
      .schedulerFor("delays")
      .schedule({ key: "rerun:55", runAt: new Date(Date.now() + 10_000), data: { run: 55 } });
    await e1.stop(100);
    scratch.store.close();
    expect(first.runs).toEqual([]);

    scratch.reopen();
    const second = recorder("delays");
    await start([second.module]);
    await waitFor(() => second.runs.length === 1);
    expect(second.runs[0]).toMatchObject({ key: "rerun:55", data: { run: 55 } });
  });

  it("dedups by key: the first request wins unless `replace`", async () => {
    const { module, runs } = recorder("dedup");
    const e = await start([module]);
    const s = e.schedulerFor("dedup");
    const later = new Date(Date.now() + 60_000);
    await s.schedule({ key: "k", runAt: later, data: "first" });
    await s.schedule({ key: "k", runAt: new Date(), data: "second" });
    expect((await scratch.store.tasks.listTasks()).map((t) => t.data)).toEqual(["first"]);
    await s.schedule({ key: "k", runAt: new Date(), data: "third", replace: true });
    await waitFor(() => runs.length === 1);
    expect(runs.map((r) => r.data)).toEqual(["third"]);
    // Far off: cancelled before it could run, however slow the machine.
    await s.schedule({ key: "gone", runAt: new Date(Date.now() + 60_000), data: null });
    await s.cancel("gone");
    await e.idle();
    expect(await scratch.store.tasks.listTasks()).toEqual([]);
    expect(runs).toHaveLength(1);
  });

  it("retries a throwing task with backoff, then parks it dead with its last error", async () => {
    const flaky = recorder("flaky", async (ctx) => {
      if (ctx.attempt === 1) throw new Error("first try fails");
    });
    const broken = recorder("broken", async (ctx) => {
      throw new Error(`still broken (${ctx.attempt})`);
    });
    const e = await start([flaky.module, broken.module], 2);
    await e.schedulerFor("flaky").schedule({ key: "a", runAt: new Date(), data: 1 });
    await e.schedulerFor("broken").schedule({ key: "b", runAt: new Date(), data: 1 });
    await waitFor(
      async () => (await scratch.store.tasks.listTasks()).every((t) => t.status === "dead") && flaky.runs.length === 2,
    );
    expect(flaky.runs.map((r) => r.attempt)).toEqual([1, 2]);
    expect(broken.runs.map((r) => r.attempt)).toEqual([1, 2]);
    const tasks = await scratch.store.tasks.listTasks();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      handler: "broken",
      key: "b",
      status: "dead",
      attempts: 2,
      lastError: "still broken (2)",
    });
  });

  it("lets a task re-schedule itself under the same key (periodic work)", async () => {
    const periodic = recorder("tick", async (ctx, runs) => {
      if (runs.length < 3)
        await ctx.scheduler.schedule({ key: ctx.key, runAt: new Date(Date.now() + 10), data: runs.length });
    });
    const e = await start([periodic.module]);
    await e.schedulerFor("tick").schedule({ key: "every", runAt: new Date(), data: 0 });
    await waitFor(() => periodic.runs.length === 3);
    await e.idle();
    expect(periodic.runs.map((r) => r.data)).toEqual([0, 1, 2]);
    expect(await scratch.store.tasks.listTasks()).toEqual([]);
  });
});

describe("one run path for tasks and deliveries", () => {
  it("a task's failure is redacted and measured exactly like a handler's failure on a delivery", async () => {
    const token = `ghs_${"a".repeat(36)}`;
    const leaky = (where: string) => `${where} failed with test-webhook-secret and ${token}`;
    const observed: [string, string][] = [];
    const module = defineHandler<unknown>({
      name: "leaky",
      events: ["ping"],
      async handle() {
        throw new Error(leaky("delivery"));
      },
      async onTask() {
        throw new Error(leaky("task"));
      },
    });
    const engine = (scratch.engine = testEngine(scratch.store, [module], {
      maxAttempts: 1,
      observe: { outcome: (h, status) => observed.push([h, status]) },
    }));
    await engine.start();
    await engine.schedulerFor("leaky").schedule({ key: "k", runAt: new Date(), data: null });
    await engine.intake.record(deliveryOf("ping", examplePayload("ping")));
    await waitFor(
      async () =>
        (await scratch.store.tasks.listTasks()).some((t) => t.status === "dead") &&
        (await scratch.store.deliveries.listDeliveries({ status: "dead" })).length === 1,
    );
    const [task] = await scratch.store.tasks.listTasks();
    const [delivery] = await scratch.store.deliveries.listDeliveries({ status: "dead" });
    expect(task!.lastError).toBe("task failed with [REDACTED] and [REDACTED]");
    expect(delivery!.lastError).toBe("leaky: delivery failed with [REDACTED] and [REDACTED]");
    expect(observed).toEqual(
      expect.arrayContaining([
        ["leaky", "failed"],
        ["leaky", "failed"],
      ]),
    );
    expect(observed).toHaveLength(2);
  });

  it("a task returning something that is not an outcome fails for good, as a delivery's handler would", async () => {
    const module = defineHandler<unknown>({
      name: "odd",
      events: [],
      async handle() {},
      async onTask() {
        return { status: "fine" } as never;
      },
    });
    const e = await start([module]);
    await e.schedulerFor("odd").schedule({ key: "x", runAt: new Date(), data: null });
    await waitFor(async () => (await scratch.store.tasks.listTasks()).some((t) => t.status === "dead"));
    expect((await scratch.store.tasks.listTasks())[0]).toMatchObject({
      attempts: 1,
      lastError: "handler returned something that is not an outcome",
    });
  });
});
