import { describe, expect, it } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { createSteward } from "../../src/app.js";
import { defineHandler } from "../../src/handler.js";
import { appKey } from "../support/app-key.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "./helpers.js";
import { perTest } from "./per-test.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!
  .examples[0]!;
const pushWithInstallation = JSON.stringify({ ...push, installation: { id: 77, node_id: "MDIz" } });

const scope = perTest();

describe("createSteward", () => {
  it("receives, records and processes a delivery; exposes health, readiness and metrics", async () => {
    const hub = await scope.hub();
    const installation = hub.control.installation("acme")!.id;
    hub.control.setRateLimit(installation, { limit: 5000, remaining: 4322 });
    const pushWithInstallation = JSON.stringify({ ...push, installation: { id: installation, node_id: "MDIz" } });
    const dir = await scope.dataDir("app");
    const seen: string[] = [];
    let handled!: () => void;
    const done = new Promise<void>((resolve) => (handled = resolve));
    const probe = defineHandler<undefined>({
      name: "probe",
      events: ["push"],
      async handle(ctx) {
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
        seen.push(ctx.deliveryId);
        handled();
        return { status: "done", summary: "probed" };
      },
    });
    const { logger, output } = collectingLogger("info");
    const steward = await scope.steward({
      config: testConfig({
        appId: Number(hub.env.APP_ID),
        privateKey: hub.env.PRIVATE_KEY,
        apiUrl: hub.url,
        dataDir: dir,
      }),
      logger,
      handlers: [probe],
    });
    expect(steward.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${steward.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${steward.url}/readyz`)).status).toBe(200);

    const id = deliveryId();
    const res = await postDelivery(steward.url, { body: pushWithInstallation, id, event: "push" });
    expect(res.status).toBe(202);
    expect((await postDelivery(steward.url, { body: pushWithInstallation, id, event: "push" })).status).toBe(200);
    await done;
    await steward.engine.idle();
    expect(seen).toEqual([id]);

    const metrics = await (await fetch(`${steward.url}/metrics`)).text();
    expect(metrics).toMatch(/steward_deliveries_received_total\{event="push",status="202"\} 1/);
    expect(metrics).toMatch(/steward_deliveries_received_total\{event="push",status="200"\} 1/);
    expect(metrics).toMatch(/steward_queue_depth \d+/);
    expect(metrics).toMatch(/steward_handler_outcomes_total\{handler="probe",outcome="done"\} 1/);
    expect(metrics).toMatch(/steward_handler_duration_seconds_count\{handler="probe"\} 1/);
    expect(metrics).toMatch(
      new RegExp(`steward_api_requests_total\\{installation="${installation}",status="200"\\} 1`),
    );
    expect(metrics).toMatch(new RegExp(`steward_api_rate_limit_remaining\\{installation="${installation}"\\} 4321`));
    expect(metrics).toMatch(/steward_process_cpu_seconds_total/);
    expect(output()).toContain('"msg":"delivery recorded"');
  });

  it("answers 503 once shutdown began, lets in-flight work finish, then closes", async () => {
    const dir = await scope.dataDir("app");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let finished = false;
    const slow = defineHandler<undefined>({
      name: "slow",
      events: ["push"],
      async handle() {
        started();
        await gate;
        finished = true;
        return { status: "done" };
      },
    });
    const steward = await scope.steward({
      config: testConfig({ privateKey: appKey().privateKey, dataDir: dir }),
      logger: collectingLogger().logger,
      handlers: [slow],
    });
    const url = steward.url;
    expect((await postDelivery(url, { body: pushWithInstallation })).status).toBe(202);
    await running;
    const closing = steward.close();
    // The engine is waiting for the slow handler, so the server is still up, refusing.
    expect((await postDelivery(url, { body: pushWithInstallation })).status).toBe(503);
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
    release();
    await closing;
    expect(finished).toBe(true);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it("reports a port in use as a start-up error and releases the store", async () => {
    const dir = await scope.dataDir("app");
    const config = testConfig({ privateKey: appKey().privateKey, dataDir: dir });
    const steward = await scope.steward({ config, logger: collectingLogger().logger, handlers: [] });
    const port = Number(new URL(steward.url).port);
    const other = await scope.dataDir("app");
    await expect(
      createSteward({ config: { ...config, port, dataDir: other }, logger: collectingLogger().logger, handlers: [] }),
    ).rejects.toThrow(/EADDRINUSE/);
  });
});

describe("redelivery sweeper wiring", () => {
  it("asks the API again for a failed delivery Steward never recorded, and not for one it has", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("app");
    // Two pushes the hub could not deliver (nothing listens on port 1).
    hub.control.setWebhookUrl("http://127.0.0.1:1/");
    const pushes = () => hub.control.deliveries().filter((d) => d.event === "push");
    hub.control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "a\n" } });
    hub.control.pushFiles({ owner: "acme", repo: "web", files: { "b.txt": "b\n" } });
    await hub.control.waitForDeliveries((d) => d.event === "push", { count: 2 });
    await hub.control.settled();
    const [known, lost] = pushes();
    expect([known!.status_code, lost!.status_code]).toEqual([0, 0]);
    // The list answers only once `known` is recorded, so the sweep's view is deterministic.
    hub.control.setFault("GET /app/hook/deliveries", { status: 502 });
    const steward = await scope.steward({
      config: testConfig({
        appId: Number(hub.env.APP_ID),
        privateKey: hub.env.PRIVATE_KEY,
        apiUrl: hub.url,
        dataDir: dir,
        redeliverIntervalMs: 300,
      }),
      logger: collectingLogger().logger,
      handlers: [],
    });
    expect((await postDelivery(steward.url, { body: JSON.stringify(known!.payload), id: known!.guid })).status).toBe(
      202,
    );
    hub.control.clearFaults();
    const attempts = (id: number) =>
      hub.control.requests().filter((r) => r.method === "POST" && r.path === `/app/hook/deliveries/${id}/attempts`);
    for (let waited = 0; attempts(lost!.id).length === 0; waited += 100) {
      if (waited > 20_000) throw new Error("the sweeper never asked for the lost delivery");
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(attempts(lost!.id)[0]!.status).toBe(202);
    await steward.close();
    expect(attempts(known!.id)).toHaveLength(0);
  });
});
