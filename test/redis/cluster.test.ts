// Steward on a Redis Cluster (three primaries started here from the machine's redis-server):
// the URL of any node selects the Cluster client, a deployment's keys all live on one node
// (one hash tag), a prefix without a hash tag and a database other than 0 are refused with a
// message that says what to do, and two Steward processes behind a balancer handle every
// delivery exactly once, with the write slot's holder killed once on the way. The store's
// conformance suite runs on the same kind of cluster in test/store/contract.test.ts, the
// coordination's in test/coordination/contract.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cluster, Redis } from "ioredis";
import { openRedisStore } from "../../src/store/redis/store.js";
import { connectRedis } from "../../src/store/redis/connect.js";
import { deliveryOf, examplePayload } from "../engine/helpers.js";
import { clusterAvailable, startRedisCluster, type TestCluster } from "./cluster-support.js";
import { dropPrefix, prefixPattern, redisUp, redisUrl, uniquePrefix } from "./support.js";
import { proveHolderKills } from "../support/replicas-proof.js";
import { redisBackend } from "./replicas-support.js";

const WRITE_INTERVAL_MS = 400;

describe.skipIf(!clusterAvailable)("Steward on a Redis Cluster", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 120_000);
  afterAll(async () => cluster?.stop());

  it("selects the Cluster client from a node's URL and keeps a deployment's keys on one node", async () => {
    const client = await connectRedis(cluster.url, undefined, "steward-test");
    const prefix = uniquePrefix();
    try {
      expect(client).toBeInstanceOf(Cluster);
      const store = await openRedisStore(cluster.url, { prefix });
      const payload = examplePayload("workflow_run", "completed");
      for (let i = 0; i < 20; i++)
        expect(await store.deliveries.record(deliveryOf("workflow_run", payload))).toBe("recorded");
      await store.kv.set("state:a", { n: 1 });
      await store.tasks.scheduleTask("h", { key: "k", runAt: new Date(), data: 1 });
      await store.close();
      const perNode = await Promise.all(
        (client as Cluster).nodes("master").map(async (node) => {
          let cursor = "0";
          let n = 0;
          do {
            const [next, keys] = await node.scan(cursor, "MATCH", prefixPattern(prefix), "COUNT", 1000);
            cursor = next;
            n += keys.length;
          } while (cursor !== "0");
          return n;
        }),
      );
      expect(perNode).toHaveLength(3);
      // Bodies, states, indexes, kv and tasks: all on one of the three nodes.
      expect(perNode.filter((n) => n > 0)).toHaveLength(1);
      expect(Math.max(...perNode)).toBeGreaterThan(40);
    } finally {
      client.disconnect();
      await dropPrefix(prefix, cluster.url);
    }
  });

  it("refuses a key prefix without a hash tag, and a database other than 0, saying what to use", async () => {
    await expect(openRedisStore(cluster.url, { prefix: "acme-steward:" })).rejects.toThrow(
      /Redis key prefix "acme-steward:" has no hash tag.*e\.g\. "\{acme-steward\}:"/,
    );
    const url = cluster.url.replace(/\/0$/, "/2");
    await expect(openRedisStore(url)).rejects.toThrow(/is a Redis Cluster node: a cluster has only database 0/);
  });

  it("two Steward processes on the cluster: each run's effects exactly once, the slot holder killed once, one token mint", async () => {
    await proveHolderKills(redisBackend(cluster.url), {
      label: "cluster replicas",
      replicas: 2,
      holderKills: 1,
      writeIntervalMs: WRITE_INTERVAL_MS,
      minRuns: 10,
    });
  }, 600_000);
});

describe.skipIf(!redisUp)("key prefixes on a standalone Redis", () => {
  it("are held to the same rule: a hash tag, so the deployment can move to a cluster as it is", async () => {
    await expect(openRedisStore(redisUrl, { prefix: "plain:" })).rejects.toThrow(/has no hash tag/);
    const client = await connectRedis(redisUrl, undefined, "steward-test");
    try {
      expect(client).toBeInstanceOf(Redis);
    } finally {
      client.disconnect();
    }
  });
});
