// Steward on Valkey (the machine's valkey-server, started here): the store and the coordination
// pass their conformance suites on it (test/store/contract.test.ts,
// test/coordination/contract.test.ts); here two Steward processes share one Valkey as replicas
// share a Redis, with the write slot's holder killed once: each run's effects exactly once and one
// token mint for the installation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRedisStore } from "../../src/store/redis/store.js";
import { deliveryOf, examplePayload } from "../engine/helpers.js";
import { proveHolderKills } from "../support/replicas-proof.js";
import { redisBackend } from "./replicas-support.js";
import { uniquePrefix } from "./support.js";
import { startValkey, valkeyAvailable, type TestValkey } from "./valkey-support.js";

describe.skipIf(!valkeyAvailable)("Steward on Valkey", () => {
  let valkey: TestValkey;
  beforeAll(async () => {
    valkey = await startValkey();
  }, 60_000);
  afterAll(async () => valkey?.stop());

  it("records, claims and finishes a delivery on Valkey as on Redis", async () => {
    const store = await openRedisStore(valkey.url, { prefix: uniquePrefix() });
    try {
      const delivery = deliveryOf("workflow_run", examplePayload("workflow_run", "completed"));
      expect(await store.deliveries.record(delivery)).toBe("recorded");
      expect(await store.deliveries.record(delivery)).toBe("duplicate");
      expect((await store.deliveries.getDelivery(delivery.id))?.delivery.status).toBe("queued");
    } finally {
      await store.close();
    }
  });

  it("two Steward processes on Valkey: each run's effects exactly once, the slot holder killed once, one token mint", async () => {
    await proveHolderKills(redisBackend(valkey.url), {
      label: "valkey replicas",
      replicas: 2,
      holderKills: 1,
      writeIntervalMs: 400,
      minRuns: 10,
    });
  }, 600_000);
});
