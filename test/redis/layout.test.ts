// A Redis written by the earlier delivery layout (headers and payload as one JSON body) is refused
// at open with what to do, rather than read as if its bodies were payloads.
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { openRedisStore } from "../../src/store/redis/store.js";
import { RedisKeys } from "../../src/store/redis/keys.js";
import { dropPrefix, redisUp, redisUrl, uniquePrefix } from "./support.js";

describe.skipIf(!redisUp)("the Redis store's delivery layout", () => {
  const prefix = uniquePrefix();
  afterEach(() => dropPrefix(prefix));

  it("refuses a Redis holding deliveries of the earlier layout, and opens on its own", async () => {
    const store = await openRedisStore(redisUrl, { prefix });
    await store.deliveries.record({
      id: "d-new",
      event: "issues",
      action: "opened",
      installationId: undefined,
      repository: undefined,
      headers: { "x-github-event": "issues" },
      payload: '{"action":"opened"}',
      receivedAt: new Date(1_000),
    });
    await store.close();
    await (await openRedisStore(redisUrl, { prefix })).close();
    // An earlier Steward's delivery, older than the one above: no headers field, one JSON body.
    const keys = new RedisKeys(prefix);
    const raw = new Redis(redisUrl);
    await raw.set(keys.body("d-old"), JSON.stringify({ headers: {}, payload: '{"action":"opened"}' }));
    await raw.hset(keys.delivery("d-old"), { id: "d-old", event: "issues", status: "done", receivedAt: 500 });
    await raw.zadd(keys.all, 500, "d-old");
    raw.disconnect();
    await expect(openRedisStore(redisUrl, { prefix })).rejects.toThrow(
      /in the layout of an earlier Steward.*delete the keys under/,
    );
  });
});
