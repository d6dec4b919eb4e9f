// STEWARD_DURABILITY on PostgreSQL, on a server of the test's own (its WAL statistics are this
// test's alone). At `power` every recorded delivery's commit is flushed before `record`
// resolves, so a crash of the server right after loses none; at `process` the record's commit
// does not wait for its flush (the server flushes it shortly after, or with the next synchronous
// commit), so recording one delivery at a time syncs the WAL far less often than once each.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryOf, examplePayload } from "../engine/helpers.js";
import { openPostgresStore } from "../../src/store/postgres/store.js";
import { privateServerUnavailable, startPrivateServer, type PrivateServer } from "./private-server.js";
import { withClient } from "./support.js";
import { appKey } from "../support/app-key.js";
import { deliveryId, postDelivery, testConfig } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";

const scope = perTest();

const DELIVERIES = 200;

/** WAL syncs the server has counted (each backend reports its own as it exits, see settledWalSyncs). */
async function walSyncs(url: string): Promise<number> {
  const { rows } = await withClient((c) => c.query<{ n: string }>("SELECT wal_sync::text AS n FROM pg_stat_wal"), url);
  return Number(rows[0]!.n);
}

/** Records DELIVERIES deliveries one after another (each its own commit) at `durability`; their ids. */
async function recordOneByOne(url: string, schema: string, durability: "process" | "power") {
  const store = await openPostgresStore(url, { schema, durability });
  const ids: string[] = [];
  try {
    for (let i = 0; i < DELIVERIES; i++) {
      const d = deliveryOf("push", examplePayload("push"));
      expect(await store.deliveries.record(d)).toBe("recorded");
      ids.push(d.id);
    }
  } finally {
    await store.close();
  }
  return ids;
}

async function recordedCount(url: string, schema: string, ids: string[]): Promise<number> {
  const store = await openPostgresStore(url, { schema });
  try {
    let n = 0;
    for (const id of ids) if (await store.deliveries.getDelivery(id)) n++;
    return n;
  } finally {
    await store.close();
  }
}

/** Backends that have ended report their statistics as they exit: wait until the count holds still. */
async function settledWalSyncs(url: string): Promise<number> {
  let last = await walSyncs(url);
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await walSyncs(url);
    if (now === last) return now;
    last = now;
  }
}

if (privateServerUnavailable) console.warn(`PostgreSQL durability test skipped: ${privateServerUnavailable}`);

describe.skipIf(privateServerUnavailable !== undefined)("STEWARD_DURABILITY on PostgreSQL", () => {
  let server: PrivateServer;
  beforeAll(async () => {
    // The WAL writer's own flushes once in 10 s (the most it allows) rather than every 200 ms, so
    // that at `process` the count of syncs does not grow with how long a loaded machine takes.
    server = await startPrivateServer(["wal_writer_delay=10000"]);
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("power: every delivery's commit is flushed before it is answered, and a crash of the server loses none", async () => {
    // The schema made first, so that the count is of the records alone.
    await (await openPostgresStore(server.url, { schema: "power" })).close();
    const before = await settledWalSyncs(server.url);
    const ids = await recordOneByOne(server.url, "power", "power");
    const syncs = (await settledWalSyncs(server.url)) - before;
    expect(syncs).toBeGreaterThanOrEqual(DELIVERIES);
    await server.crash();
    expect(await recordedCount(server.url, "power", ids)).toBe(DELIVERIES);
  }, 180_000);

  it("process: the record's commit does not wait for a WAL flush; a clean restart loses nothing", async () => {
    await (await openPostgresStore(server.url, { schema: "process" })).close();
    const before = await settledWalSyncs(server.url);
    const ids = await recordOneByOne(server.url, "process", "process");
    const syncs = (await settledWalSyncs(server.url)) - before;
    // The server's WAL writer flushes after each MB of WAL: a handful, not one a delivery.
    expect(syncs).toBeLessThan(DELIVERIES / 2);
    await server.restart();
    expect(await recordedCount(server.url, "process", ids)).toBe(DELIVERIES);
  }, 180_000);

  it.each(["power", "process"] as const)(
    "a running Steward takes STEWARD_DURABILITY=%s to its PostgreSQL store",
    async (durability) => {
      const push = JSON.stringify({ ...examplePayload("push"), installation: { id: 77, node_id: "MDIz" } });
      const schema = `app_${durability}`;
      const steward = await scope.steward({
        config: testConfig({ privateKey: appKey().privateKey, postgresUrl: server.url, durability }),
        postgres: { schema },
        handlers: [],
      });
      const before = await walSyncs(server.url);
      const posts = 100;
      for (let i = 0; i < posts; i++)
        expect((await postDelivery(steward.url, { body: push, id: deliveryId(), event: "push" })).status).toBe(202);
      await steward.close();
      const syncs = (await settledWalSyncs(server.url)) - before;
      // Steward's own heartbeat and probes commit too, about one a second, synchronously at both levels.
      if (durability === "power") expect(syncs).toBeGreaterThanOrEqual(posts);
      else expect(syncs).toBeLessThan(posts / 2);
    },
    180_000,
  );
});
