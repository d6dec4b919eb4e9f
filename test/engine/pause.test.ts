// Pause and resume: while paused, deliveries sent over real HTTP are recorded and answered 202
// and no handler runs them; a restart keeps the pause (it is in the store); a resume, from the
// CLI in another "process" of the same store, runs the backlog in the order it arrived. Pausing
// one installation holds only its work.
import { afterEach, describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { defineHandler } from "../../src/handler.js";
import type { Steward } from "../../src/app.js";
import { appKey } from "../support/app-key.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";
import { runCli } from "../cli/capture.js";
import { listPauses, pause, PAUSE_READ_MS } from "../../src/engine/pauses.js";

/** A pause written by another process (the CLI) takes effect within PAUSE_READ_MS: wait that out. */
const seenByTheEngine = () => new Promise((r) => setTimeout(r, PAUSE_READ_MS + 200));

const scope = perTest();
const example = (name: string) =>
  (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === name)!.examples[0]!;
const ping = JSON.stringify(example("ping"));
const pushFor = (installation: number) => JSON.stringify({ ...example("push"), installation: { id: installation } });

/** A handler that notes each delivery it ran, in the order it ran them. */
function recorder(events: ("ping" | "push")[]) {
  const ran: string[] = [];
  const handler = defineHandler<unknown>({
    name: "recorder",
    events,
    async handle(ctx) {
      ran.push(ctx.deliveryId);
      return { status: "done" };
    },
  });
  return { ran, handler };
}

const metric = async (steward: Steward, line: RegExp) => line.exec(await steward.metrics.text())?.[1];

/** Due work has waited longer than the pool's poll (1 s) several times over: it had every chance to claim it. */
async function waitedUnclaimed(steward: Steward): Promise<void> {
  await vi.waitFor(
    async () => expect(Number(await metric(steward, /^steward_queue_oldest_age_seconds (\S+)$/m))).toBeGreaterThan(3),
    { timeout: 60_000, interval: 200 },
  );
}

afterEach(() => {
  delete process.env.STEWARD_DATA_DIR;
});

describe("pause and resume", { timeout: 120_000 }, () => {
  it("holds everything across a restart, answers 202 meanwhile, and runs the backlog in order on resume", async () => {
    const dataDir = await scope.dataDir("pause");
    const { logger } = collectingLogger("warn");
    const { ran, handler } = recorder(["ping"]);
    const config = testConfig({ privateKey: appKey().privateKey, dataDir });
    const first = await scope.steward({ config, logger, handlers: [handler] });
    process.env.STEWARD_DATA_DIR = dataDir;
    const paused = await runCli(["pause"]);
    expect(paused, paused.err).toMatchObject({ code: 0 });
    expect(paused.out).toContain("paused everything");
    await seenByTheEngine();

    const sent: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = deliveryId();
      sent.push(id);
      expect((await postDelivery(first.url, { body: ping, event: "ping", id })).status).toBe(202);
    }
    await waitedUnclaimed(first);
    expect(ran).toEqual([]);
    expect(await metric(first, /^steward_paused\{scope="all",target=""\} (\S+)$/m)).toBe("1");
    for (const id of sent) expect((await first.store.deliveries.getDelivery(id))?.delivery.status).toBe("queued");
    await first.close();

    // A new process on the same store: still paused.
    const second = await scope.steward({ config, logger, handlers: [handler] });
    expect((await runCli(["pause", "status"])).out).toContain("paused: everything (by cli:");
    await waitedUnclaimed(second);
    expect(ran).toEqual([]);

    const resumed = await runCli(["resume"]);
    expect(resumed).toMatchObject({ code: 0 });
    expect(resumed.out).toContain("resumed everything");
    expect(resumed.out).toContain("nothing is paused");
    await vi.waitFor(() => expect(ran).toEqual(sent), { timeout: 60_000, interval: 100 });
    expect(await metric(second, /^steward_paused\{[^}]*\} (\S+)$/m)).toBeUndefined();
  });

  it("pausing one installation holds its deliveries only; resume runs them", async () => {
    const dataDir = await scope.dataDir("pause");
    const { logger } = collectingLogger("warn");
    const { ran, handler } = recorder(["push"]);
    const steward = await scope.steward({
      config: testConfig({ privateKey: appKey().privateKey, dataDir }),
      logger,
      handlers: [handler],
    });
    await pause(steward.store.kv, { kind: "installation", installation: 7 }, "test");
    steward.engine.pausesChanged();
    expect(await metric(steward, /^steward_paused\{scope="installation",target="7"\} (\S+)$/m)).toBe("1");

    const held = [deliveryId(), deliveryId()];
    const other = deliveryId();
    expect((await postDelivery(steward.url, { body: pushFor(7), event: "push", id: held[0] })).status).toBe(202);
    expect((await postDelivery(steward.url, { body: pushFor(8), event: "push", id: other })).status).toBe(202);
    expect((await postDelivery(steward.url, { body: pushFor(7), event: "push", id: held[1] })).status).toBe(202);
    // Installation 8's delivery, sent after the first of 7's, runs; 7's were claimed before it and held.
    await vi.waitFor(() => expect(ran).toContain(other), { timeout: 60_000, interval: 100 });
    await vi.waitFor(
      async () => {
        for (const id of held) {
          const record = await steward.store.deliveries.getDelivery(id);
          expect(record?.delivery.status).toBe("queued");
          expect(record?.delivery.nextRunAt.getTime()).toBeGreaterThan(Date.now());
        }
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(ran).toEqual([other]);

    process.env.STEWARD_DATA_DIR = dataDir;
    expect((await runCli(["resume", "--installation", "7"])).out).toContain("resumed installation 7");
    await vi.waitFor(() => expect(ran).toEqual([other, ...held]), { timeout: 60_000, interval: 100 });
    expect((await listPauses(steward.store.kv)).length).toBe(0);
  });

  it("a paused handler's start and scheduled tasks are held too, and run on resume", async () => {
    const dataDir = await scope.dataDir("pause");
    process.env.STEWARD_DATA_DIR = dataDir;
    // Paused before the process starts: its start must not run at all.
    expect((await runCli(["pause", "--handler", "background"])).out).toContain("paused handler background");
    let starts = 0;
    const tasks: string[] = [];
    const handler = defineHandler<unknown>({
      name: "background",
      events: ["ping"],
      async handle() {
        return { status: "done" };
      },
      async start() {
        starts++;
      },
      async onTask(ctx) {
        tasks.push(ctx.key);
        return { status: "done" };
      },
    });
    const { logger } = collectingLogger("warn");
    const steward = await scope.steward({
      config: testConfig({ privateKey: appKey().privateKey, dataDir }),
      logger,
      handlers: [handler],
    });
    const state = () => steward.engine.handlerStarts().find((s) => s.handler === "background")?.state;
    await vi.waitFor(() => expect(state()).toBe("paused"), { timeout: 60_000, interval: 100 });
    const due = new Date();
    await steward.engine.schedulerFor("background").schedule({ key: "background/sweep", runAt: due, data: {} });
    // The engine claimed the due task and gave it back for later: held, not run.
    await vi.waitFor(
      async () => {
        const [task] = await steward.store.tasks.listTasks();
        expect(task?.runAt.getTime()).toBeGreaterThan(due.getTime());
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(tasks).toEqual([]);
    expect(starts).toBe(0);
    expect(state()).toBe("paused");

    expect((await runCli(["resume", "--handler", "background"])).out).toContain("resumed handler background");
    await vi.waitFor(() => expect(state()).toBe("started"), { timeout: 60_000, interval: 100 });
    expect(starts).toBe(1);
    await vi.waitFor(() => expect(tasks).toEqual(["background/sweep"]), { timeout: 60_000, interval: 100 });
  });

  it("refuses a pause of a handler and an installation at once, and unknown flags", async () => {
    const dataDir = await scope.dataDir("pause");
    process.env.STEWARD_DATA_DIR = dataDir;
    const both = await runCli(["pause", "--handler", "rerun", "--installation", "3"]);
    expect(both.code).toBe(2);
    expect(both.err).toContain("not both");
    expect((await runCli(["resume", "--everything"])).code).toBe(2);
    expect((await runCli(["pause", "--installation", "-1"])).err).toContain("not an installation id");
  });
});
