import { afterEach, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { createSteward, type Steward } from "../../src/app.js";
import { defineHandler } from "../../src/handler.js";
import { appKey, json, startFakeApi, type FakeApi } from "./fake-api.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "./helpers.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!.examples[0]!;
const pushWithInstallation = JSON.stringify({ ...push, installation: { id: 77, node_id: "MDIz" } });

let steward: Steward | undefined;
let api: FakeApi | undefined;
let dir: string | undefined;
afterEach(async () => {
  await steward?.close();
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  steward = api = dir = undefined;
});

describe("createSteward", () => {
  it("receives, records and processes a delivery; exposes health, readiness and metrics", async () => {
    api = await startFakeApi({ appId: 4242 });
    api.routes.push((req, res) => {
      if (req.path === "/repos/Codertocat/Hello-World") json(res, 200, { id: 1 }, { "x-ratelimit-remaining": "4321" });
      else return false;
    });
    dir = await mkdtemp(join(tmpdir(), "steward-app-"));
    const seen: string[] = [];
    let handled!: () => void;
    const done = new Promise<void>((resolve) => (handled = resolve));
    const probe = defineHandler<undefined>({
      name: "probe",
      events: ["push"],
      async handle(ctx) {
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "Codertocat", repo: "Hello-World" });
        seen.push(ctx.deliveryId);
        handled();
        return { status: "done", summary: "probed" };
      },
    });
    const { logger, output } = collectingLogger("info");
    steward = await createSteward({
      config: testConfig({ privateKey: appKey().privateKey, apiUrl: api.url, dataDir: dir }),
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
    expect(metrics).toMatch(/steward_api_requests_total\{installation="77",status="200"\} 1/);
    expect(metrics).toMatch(/steward_api_rate_limit_remaining\{installation="77"\} 4321/);
    expect(metrics).toMatch(/steward_process_cpu_seconds_total/);
    expect(output()).toContain('"msg":"delivery recorded"');
  });

  it("answers 503 once shutdown began, lets in-flight work finish, then closes", async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-app-"));
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
    steward = await createSteward({
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
    dir = await mkdtemp(join(tmpdir(), "steward-app-"));
    const config = testConfig({ privateKey: appKey().privateKey, dataDir: dir });
    steward = await createSteward({ config, logger: collectingLogger().logger, handlers: [] });
    const port = Number(new URL(steward.url).port);
    const other = await mkdtemp(join(tmpdir(), "steward-app-"));
    try {
      await expect(
        createSteward({ config: { ...config, port, dataDir: other }, logger: collectingLogger().logger, handlers: [] }),
      ).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});

describe("redelivery sweeper wiring", () => {
  it("asks the API again for a failed delivery Steward never recorded, and not for one it has", async () => {
    api = await startFakeApi({ appId: 4242 });
    dir = await mkdtemp(join(tmpdir(), "steward-app-"));
    const known = deliveryId();
    const lost = deliveryId();
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    let asked!: (path: string) => void;
    const redelivered = new Promise<string>((resolve) => (asked = resolve));
    let markRecorded!: () => void;
    const knownRecorded = new Promise<void>((resolve) => (markRecorded = resolve));
    api.routes.push((req, res) => {
      if (req.method === "GET" && req.path.startsWith("/app/hook/deliveries")) {
        // Answer only once `known` is recorded, so the sweep's view is deterministic.
        void knownRecorded.then(() =>
          json(res, 200, [
            { id: 11, guid: lost, delivered_at: now, redelivery: false, status_code: 502, event: "push", action: null },
            { id: 12, guid: known, delivered_at: now, redelivery: false, status_code: 502, event: "push", action: null },
          ]),
        );
        return true;
      } else if (req.method === "POST" && /^\/app\/hook\/deliveries\/\d+\/attempts$/.test(req.path)) {
        res.writeHead(202, { "content-type": "application/json" }).end("{}");
        asked(req.path);
      } else return false;
    });
    steward = await createSteward({
      config: testConfig({ privateKey: appKey().privateKey, apiUrl: api.url, dataDir: dir, redeliverIntervalMs: 300 }),
      logger: collectingLogger().logger,
      handlers: [],
    });
    expect((await postDelivery(steward.url, { body: pushWithInstallation, id: known })).status).toBe(202);
    markRecorded();
    expect(await redelivered).toBe("/app/hook/deliveries/11/attempts");
    await steward.close();
    expect(api.seen.filter((r) => r.path === "/app/hook/deliveries/12/attempts")).toHaveLength(0);
  });
});
