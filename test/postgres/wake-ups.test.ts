// Wake-ups between replicas on PostgreSQL go only where a replica may hear them: while the
// replica registry's last heartbeat saw no other replica alive, queued work sends no notice (it
// would wake only this replica's own listening connection); once another registers, the next
// heartbeat sees it and the deliveries recorded after wake it. Notices of one channel arrive in
// commit order, so a marker sent after a write says whether that write sent one.
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deliveryOf, examplePayload } from "../engine/helpers.js";
import { startPostgresReplicaRegistry } from "../../src/coordination/postgres/replicas.js";
import type { ReplicaRegistry } from "../../src/coordination/replicas.js";
import { createPool, ident } from "../../src/store/postgres/connect.js";
import type { PostgresStore } from "../../src/store/postgres/store.js";
import { postgresStores, postgresUp, postgresUrl } from "./support.js";

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const d of disposers.splice(0).reverse()) await d();
});

const push = () => deliveryOf("push", examplePayload("push"));
const none = { writeSlots: [], tokenMints: [] };

/** A connection listening on the deployment's wake-up channel, with every payload it heard. */
async function eavesdrop(schema: string) {
  const channel = `steward_work:${schema}`.slice(0, 63);
  const client = new pg.Client({ connectionString: postgresUrl });
  const heard: string[] = [];
  client.on("notification", (n) => heard.push(n.payload ?? ""));
  await client.connect();
  await client.query(`LISTEN ${ident(channel)}`);
  disposers.push(() => client.end());
  let markers = 0;
  return {
    heard,
    /**
     * The notices that came before a marker sent now: notices arrive in commit order, so
     * anything a write committed earlier sent is among them.
     */
    async before(): Promise<string[]> {
      const marker = `marker-${++markers}`;
      await client.query("SELECT pg_notify($1, $2)", [channel, marker]);
      await vi.waitFor(() => expect(heard).toContain(marker), { timeout: 30_000, interval: 20 });
      const earlier = heard.splice(0, heard.indexOf(marker) + 1);
      return earlier.slice(0, -1).filter((p) => !p.startsWith("marker-"));
    },
  };
}

/** A replica's registry, telling `store` what it saw as the application does; `seen` is its last answer. */
function register(store: PostgresStore, schema: string, id: string) {
  const pool = createPool(postgresUrl, { name: "steward-test-registry", max: 2 }, undefined);
  const last: { seen: boolean | undefined; beats: number } = { seen: undefined, beats: 0 };
  const registry: ReplicaRegistry = startPostgresReplicaRegistry({
    pool,
    s: ident(schema),
    id,
    holds: () => none,
    onOthers: (alive) => {
      last.seen = alive;
      last.beats++;
      store.othersAlive(alive);
    },
  });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await registry.stop();
      await pool.end();
    })());
  disposers.push(stop);
  return { last, stop };
}

describe.skipIf(!postgresUp)("wake-ups between replicas on PostgreSQL", () => {
  it("sends no notice while the registry sees no other replica, and one as soon as it is not sure", async () => {
    const stores = postgresStores();
    disposers.push(() => stores.dispose());
    const store = await stores.open();
    const ear = await eavesdrop(stores.schema);

    // Not told anything: the notice goes, as before any registry.
    await store.deliveries.record(push());
    expect(await ear.before()).toHaveLength(1);

    store.othersAlive(false);
    await store.deliveries.record(push());
    await store.deliveries.record(push());
    await store.tasks.scheduleTask("h", { key: "k", runAt: new Date(), data: 1 });
    expect(await ear.before()).toEqual([]);

    // A heartbeat that failed (undefined) or saw another replica: notices again. A task's
    // notice is sent after its write returns, so it is waited for rather than fenced.
    store.othersAlive(undefined);
    await store.deliveries.record(push());
    expect(await ear.before()).toHaveLength(1);
    store.othersAlive(true);
    await store.tasks.scheduleTask("h", { key: "k2", runAt: new Date(), data: 1 });
    await vi.waitFor(() => expect(ear.heard).toHaveLength(1), { timeout: 30_000, interval: 20 });
  });

  it("a replica that registers later is woken by the deliveries recorded once the first one's heartbeat saw it", async () => {
    const stores = postgresStores();
    disposers.push(() => stores.dispose());
    const first = await stores.open();
    first.onWork(() => undefined);
    const a = register(first, stores.schema, "host-a/1/first");
    await vi.waitFor(() => expect(a.last.seen).toBe(false), { timeout: 30_000, interval: 20 });
    const ear = await eavesdrop(stores.schema);
    await first.deliveries.record(push());
    expect(await ear.before()).toEqual([]);

    const later = await stores.open();
    let woken = 0;
    later.onWork(() => woken++);
    const b = register(later, stores.schema, "host-b/2/later");
    await vi.waitFor(() => expect(a.last.seen).toBe(true), { timeout: 30_000, interval: 20 });
    // Listening before the delivery: its LISTEN is made when the engine asks for wake-ups.
    await vi.waitFor(
      async () => {
        await first.deliveries.record(push());
        expect(woken).toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 200 },
    );

    // The later one stops (its row leaves the registry): the first is alone again.
    await b.stop();
    const beats = a.last.beats;
    await vi.waitFor(() => expect(a.last.beats).toBeGreaterThan(beats), { timeout: 30_000, interval: 20 });
    expect(a.last.seen).toBe(false);
    await ear.before();
    await first.deliveries.record(push());
    expect(await ear.before()).toEqual([]);
  });
});
