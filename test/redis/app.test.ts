// STEWARD_REDIS_URL end to end: createSteward keeps the queue in Redis, and replicas share the
// write slot of each installation in the same Redis.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { createSteward, type Steward } from "../../src/app.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { defineHandler } from "../../src/handler.js";
import { RedisStore } from "../../src/store/redis/store.js";
import { RedisWriteSlots } from "../../src/coordination/redis/write-slots.js";
import { createTokenCache } from "../../src/coordination/token-cache.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { appKey } from "../support/app-key.js";
import { collectingLogger, postDelivery, testConfig } from "../service/helpers.js";
import { silent } from "../engine/helpers.js";
import { dropPrefix, redisUp, redisUrl, uniquePrefix } from "./support.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!
  .examples[0]!;

let steward: Steward | undefined;
let api: HubHandle | undefined;
const clients: Redis[] = [];
afterEach(async () => {
  await steward?.close();
  await api?.close();
  for (const c of clients.splice(0)) c.disconnect();
  steward = api = undefined;
});

// A database of its own: createSteward uses the default key prefix.
const appDbUrl = redisUrl.replace(/\/\d*$/, "") + "/15";

describe.skipIf(!redisUp)("STEWARD_REDIS_URL", () => {
  it("records and processes deliveries in Redis; the password in the URL never reaches a log", async () => {
    const hub = (api = await createHub());
    const pushWithInstallation = JSON.stringify({
      ...push,
      installation: { id: hub.control.installation("acme")!.id, node_id: "MDIz" },
    });
    const handled: string[] = [];
    const probe = defineHandler<undefined>({
      name: "probe",
      events: ["push"],
      async handle(ctx) {
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
        await ctx.store.set(`probe:${ctx.deliveryId}`, { seen: true });
        handled.push(ctx.deliveryId);
      },
    });
    const password = `pw-${randomUUID()}`;
    const withPassword = appDbUrl.replace("redis://", `redis://:${password}@`);
    const { logger, output } = collectingLogger("debug");
    steward = await createSteward({
      config: testConfig({
        appId: Number(hub.env.APP_ID),
        privateKey: hub.env.PRIVATE_KEY,
        apiUrl: hub.url,
        redisUrl: withPassword,
      }),
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
      createSteward({
        config: testConfig({ privateKey: appKey().privateKey, redisUrl: unreachable }),
        logger,
        handlers: [],
      }),
    ).rejects.toThrow(/^cannot connect to Redis at redis:\/\/127\.0\.0\.1:1\/0[^]*$/);
    await createSteward({
      config: testConfig({ privateKey: appKey().privateKey, redisUrl: unreachable }),
      logger,
      handlers: [],
    }).catch((e: Error) => expect(e.message).not.toContain("hunter2"));
  });

  it("two replicas share the write spacing of an installation", async () => {
    const hub = (api = await createHub());
    // Four deliveries the hub recorded, for the replicas to ask again (each ask is a write).
    hub.control.setWebhookUrl("http://127.0.0.1:1/");
    for (let i = 0; i < 4; i++)
      hub.control.pushFiles({ owner: "acme", repo: "web", files: { [`f${i}.txt`]: `${i}\n` } });
    await hub.control.waitForDeliveries((d) => d.event === "push", { count: 4 });
    const ids = hub.control
      .deliveries()
      .filter((d) => d.event === "push")
      .map((d) => d.id);
    const prefix = uniquePrefix();
    const config = testConfig({ appId: Number(hub.env.APP_ID), privateKey: hub.env.PRIVATE_KEY, apiUrl: hub.url });
    const spacingMs = 250;
    const replicas = await Promise.all(
      [0, 1].map(async () => {
        const client = new Redis(redisUrl);
        clients.push(client);
        const coordination = { writeSlots: new RedisWriteSlots(client, prefix), tokens: createTokenCache() };
        return createOctokitFactory({ config, logger: silent, writeIntervalMs: spacingMs, coordination });
      }),
    );
    const octokits = await Promise.all(replicas.map((r) => r.appOctokit()));
    await Promise.all(
      ids.map((id, n) =>
        octokits[n % 2]!.request("POST /app/hook/deliveries/{delivery_id}/attempts", { delivery_id: id }),
      ),
    );
    const writes = hub.control
      .requests()
      .filter((r) => r.method === "POST" && r.path.startsWith("/app/hook/deliveries/"))
      .map((r) => r.receivedAt);
    expect(writes).toHaveLength(4);
    const sorted = [...writes].sort((a, b) => a - b);
    // Lower bound only: the replicas' writes, interleaved, are still a write interval apart.
    const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(spacingMs - 30);
    await dropPrefix(prefix);
  });
});
