// STEWARD_REDIS_URL end to end: createSteward keeps the queue in Redis and shares API
// throttling between replicas (Bottleneck clustering, and the write slot of each
// installation) in the same Redis.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { createSteward, type Steward } from "../../src/app.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { defineHandler } from "../../src/handler.js";
import { RedisStore } from "../../src/store/redis.js";
import { openSharedThrottle, type SharedThrottle } from "../../src/store/redis-throttle.js";
import { appKey, json, startFakeApi, type FakeApi } from "../service/fake-api.js";
import { collectingLogger, postDelivery, testConfig } from "../service/helpers.js";
import { silent } from "../engine/helpers.js";
import { dropPrefix, redisUp, redisUrl, uniquePrefix } from "./support.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!.examples[0]!;
const pushWithInstallation = JSON.stringify({ ...push, installation: { id: 77, node_id: "MDIz" } });

let steward: Steward | undefined;
let api: FakeApi | undefined;
const throttles: SharedThrottle[] = [];
const clients: Redis[] = [];
afterEach(async () => {
  await steward?.close();
  await api?.close();
  await Promise.all(throttles.splice(0).map((t) => t.close()));
  for (const c of clients.splice(0)) c.disconnect();
  steward = api = undefined;
});

// A database of its own: createSteward uses the default key prefix.
const appDbUrl = redisUrl.replace(/\/\d*$/, "") + "/15";

describe.skipIf(!redisUp)("STEWARD_REDIS_URL", () => {
  it("records and processes deliveries in Redis; the password in the URL never reaches a log", async () => {
    api = await startFakeApi({ appId: 4242 });
    api.routes.push((req, res) => {
      if (req.path === "/repos/Codertocat/Hello-World") json(res, 200, { id: 1 });
      else return false;
    });
    const handled: string[] = [];
    const probe = defineHandler<undefined>({
      name: "probe",
      events: ["push"],
      async handle(ctx) {
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "Codertocat", repo: "Hello-World" });
        await ctx.store.set(`probe:${ctx.deliveryId}`, { seen: true });
        handled.push(ctx.deliveryId);
      },
    });
    const password = `pw-${randomUUID()}`;
    const withPassword = appDbUrl.replace("redis://", `redis://:${password}@`);
    const { logger, output } = collectingLogger("debug");
    steward = await createSteward({
      config: testConfig({ privateKey: appKey().privateKey, apiUrl: api.url, redisUrl: withPassword }),
      logger,
      handlers: [probe],
    });
    expect(steward.store).toBeInstanceOf(RedisStore);
    expect((await fetch(`${steward.url}/readyz`)).status).toBe(200);
    const id = randomUUID();
    expect((await postDelivery(steward.url, { body: pushWithInstallation, id, event: "push" })).status).toBe(202);
    expect((await postDelivery(steward.url, { body: pushWithInstallation, id, event: "push" })).status).toBe(200);
    await steward.engine.idle();
    expect(handled).toEqual([id]);
    expect((await steward.store.deliveries.getDelivery(id))?.delivery.status).toBe("done");
    expect(await steward.store.kv.get(`probe:${id}`)).toEqual({ seen: true });
    await steward.store.kv.delete(`probe:${id}`);
    await steward.store.deliveries.purgeFinished(new Date(Date.now() + 1));
    await steward.close();
    steward = undefined;
    expect(output()).toContain("redis");
    expect(output()).not.toContain(password);
  });

  it("fails start-up with a message naming the server but not its credentials", async () => {
    const { logger } = collectingLogger("silent");
    const unreachable = "redis://:hunter2-secret@127.0.0.1:1/0";
    await expect(
      createSteward({ config: testConfig({ privateKey: appKey().privateKey, redisUrl: unreachable }), logger, handlers: [] }),
    ).rejects.toThrow(/^cannot connect to Redis at redis:\/\/127\.0\.0\.1:1\/0[^]*$/);
    await createSteward({ config: testConfig({ privateKey: appKey().privateKey, redisUrl: unreachable }), logger, handlers: [] }).catch(
      (e: Error) => expect(e.message).not.toContain("hunter2"),
    );
  });

  it("two replicas share the write spacing of an installation", async () => {
    api = await startFakeApi({ appId: 4242 });
    const writes: number[] = [];
    api.routes.push((req, res) => {
      if (req.method === "POST" && req.path.startsWith("/app/hook/deliveries/")) {
        writes.push(req.at);
        json(res, 202, {});
      } else return false;
    });
    const namespace = `steward-test-${randomUUID()}`;
    const prefix = uniquePrefix();
    const config = testConfig({ privateKey: appKey().privateKey, apiUrl: api.url });
    const spacingMs = 250;
    const replicas = await Promise.all(
      [0, 1].map(async () => {
        const throttle = await openSharedThrottle(redisUrl, { namespace });
        throttles.push(throttle);
        const client = new Redis(redisUrl);
        clients.push(client);
        return createOctokitFactory({ config, logger: silent, writeIntervalMs: spacingMs, sharedThrottle: throttle, sharedWriteSlots: { client, prefix } });
      }),
    );
    const octokits = await Promise.all(replicas.map((r) => r.appOctokit()));
    await Promise.all(
      [1, 2, 3, 4].map((n) => octokits[n % 2]!.request("POST /app/hook/deliveries/{delivery_id}/attempts", { delivery_id: n })),
    );
    expect(writes).toHaveLength(4);
    const sorted = [...writes].sort((a, b) => a - b);
    // Lower bound only: the replicas' writes, interleaved, are still a write interval apart.
    const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(spacingMs - 30);
    await dropPrefix(`b_${namespace}`);
    await dropPrefix(prefix);
  });
});
