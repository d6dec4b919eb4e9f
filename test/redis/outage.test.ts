// Redis going away under a running store: records reject (the intake answers 503, GitHub's
// delivery stays redeliverable) instead of hanging, and readiness turns false. The outage is
// a local TCP relay in front of Redis that the test closes.
import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { openRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { deliveryOf, examplePayload } from "../engine/helpers.js";
import { dropPrefix, redisUp, redisUrl, uniquePrefix } from "./support.js";

async function relay(): Promise<{ url: string; cut(): Promise<void> }> {
  const target = new URL(redisUrl);
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}${target.pathname || "/0"}`,
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

let store: RedisStore | undefined;
let prefix: string;
afterEach(async () => {
  await store?.close();
  store = undefined;
  await dropPrefix(prefix);
});

describe.skipIf(!redisUp)("Redis outage", () => {
  it("records reject and readiness is false while Redis is unreachable", async () => {
    prefix = uniquePrefix();
    const link = await relay();
    store = await openRedisStore(link.url, { prefix });
    const before = deliveryOf("push", examplePayload("push"));
    expect(await store.deliveries.record(before)).toBe("recorded");
    expect(await store.ready()).toBe(true);
    await link.cut();
    await expect(store.deliveries.record(deliveryOf("push", examplePayload("push")))).rejects.toThrow();
    expect(await store.ready()).toBe(false);
  });
});
