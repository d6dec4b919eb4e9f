// Replicas coordinating on PostgreSQL alone: the write slot of an installation (one write at a
// time across replicas, spaced from the previous answer, a dead holder's slot taken over with
// its gap kept, a stopped turn given up), installation tokens shared sealed and minted once,
// and the registry of live replicas with what each holds. Every "replica" here is a pool of
// its own on a schema of its own; a dead one is a pool ended mid-write (no renewal, no release).
import { afterEach, describe, expect, it, vi } from "vitest";
import type pg from "pg";
import { generateKeyPairSync } from "node:crypto";
import { createPool, ident, libpqUrl } from "../../src/store/postgres/connect.js";
import { Notices } from "../../src/coordination/postgres/notices.js";
import { PostgresWriteSlots, WRITE_SLOT_TTL_MS } from "../../src/coordination/postgres/write-slots.js";
import { createPostgresTokenCache, MINT_LEASE_MS } from "../../src/coordination/postgres/token-cache.js";
import { startPostgresReplicaRegistry } from "../../src/coordination/postgres/replicas.js";
import { deriveSealingKey, open } from "../../src/coordination/token-crypto.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { loadConfig } from "../../src/config/env.js";
import { silent, deliveryOf, examplePayload } from "../engine/helpers.js";
import { expectStoppedWith } from "../support/stopped.js";
import { postgresStores, postgresUp, postgresUrl, withClient } from "./support.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const INTERVAL = 300;

const cleanups: (() => Promise<void>)[] = [];
let hub: HubHandle | undefined;
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  await hub?.close();
  hub = undefined;
});

/** A deployment's schema (migrated by opening its store) and replicas' connections to it. */
async function deployment() {
  const stores = postgresStores();
  const store = await stores.open();
  cleanups.push(() => stores.dispose());
  const s = ident(stores.schema);
  return {
    schema: stores.schema,
    s,
    store,
    replica(): { pool: pg.Pool; notices: Notices } {
      const pool = createPool(postgresUrl, { name: "steward-test-coordination", max: 3 }, undefined);
      const notices = new Notices(
        pool,
        { connectionString: libpqUrl(postgresUrl) },
        `steward_coord:${stores.schema}`.slice(0, 63),
        undefined,
      );
      cleanups.push(async () => {
        await notices.close();
        await pool.end().catch(() => undefined);
      });
      return { pool, notices };
    },
  };
}

const slotHolder = (schema: string, installation: string) =>
  withClient(
    async (c) =>
      (
        await c.query<{ holder: string | null }>(`SELECT holder FROM "${schema}".write_slots WHERE installation = $1`, [
          installation,
        ])
      ).rows[0]?.holder ?? undefined,
  );

const pem = () =>
  generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();

describe.skipIf(!postgresUp)("write slots in PostgreSQL", () => {
  it("a write longer than the hold keeps the slot; the next waits the interval after its answer", async () => {
    const d = await deployment();
    const ra = d.replica();
    const rb = d.replica();
    const a = new PostgresWriteSlots(ra.pool, d.s, ra.notices, "replica-a");
    const b = new PostgresWriteSlots(rb.pool, d.s, rb.notices, "replica-b");
    let answeredAt = 0;
    const slow = a.run(
      "7",
      async () => {
        await sleep(WRITE_SLOT_TTL_MS + 1_500);
        answeredAt = Date.now();
      },
      { gapMs: INTERVAL },
    );
    await vi.waitFor(() => expect(a.held()).toEqual(["7"]), { timeout: 30_000, interval: 10 });
    let startedAt = 0;
    await b.run(
      "7",
      async () => {
        startedAt = Date.now();
      },
      { gapMs: INTERVAL },
    );
    await slow;
    expect(answeredAt).toBeGreaterThan(0);
    // The server's clock and this process's are the same host's; a millisecond of rounding.
    expect(startedAt - answeredAt).toBeGreaterThanOrEqual(INTERVAL - 2);
    expect(a.held()).toEqual([]);
  }, 90_000);

  it("writes of several replicas go one at a time, each the interval after the previous answer", async () => {
    const d = await deployment();
    const slots = [0, 1, 2].map((i) => {
      const r = d.replica();
      return new PostgresWriteSlots(r.pool, d.s, r.notices, `replica-${i}`);
    });
    let running = 0;
    let most = 0;
    const spans: { start: number; end: number }[] = [];
    await Promise.all(
      slots.flatMap((slot) =>
        [0, 1, 2].map(() =>
          slot.run(
            "7",
            async () => {
              const start = Date.now();
              most = Math.max(most, ++running);
              await sleep(20);
              running--;
              spans.push({ start, end: Date.now() });
            },
            { gapMs: 100 },
          ),
        ),
      ),
    );
    expect(spans).toHaveLength(9);
    expect(most).toBe(1);
    spans.sort((x, y) => x.start - y.start);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start - spans[i - 1]!.end).toBeGreaterThanOrEqual(100 - 2);
  }, 60_000);

  it("a write asked `first` goes ahead of this process's queued writes of the installation", async () => {
    const d = await deployment();
    const r = d.replica();
    const slots = new PostgresWriteSlots(r.pool, d.s, r.notices, "replica-a");
    const order: string[] = [];
    const write = (name: string) => async () => void order.push(name);
    await Promise.all([
      slots.run("9", write("report 1"), { gapMs: 50 }),
      slots.run("9", write("report 2"), { gapMs: 50 }),
      slots.run("9", write("report 3"), { gapMs: 50 }),
      slots.run("9", write("re-run"), { gapMs: 50, first: true }),
    ]);
    expect(order).toEqual(["report 1", "re-run", "report 2", "report 3"]);
  });

  it("a holder gone mid-write frees the slot once its hold lapses, and its gap still holds after", async () => {
    const d = await deployment();
    const dying = d.replica();
    const dead = new PostgresWriteSlots(dying.pool, d.s, dying.notices, "dead-replica");
    const rs = d.replica();
    const survivor = new PostgresWriteSlots(rs.pool, d.s, rs.notices, "survivor");
    const gap = 2_000;
    let entered!: (at: number) => void;
    const inside = new Promise<number>((r) => (entered = r));
    // The dead one's write never ends and its connections are gone: no renewal, no release.
    void dead
      .run(
        "7",
        async () => {
          await dying.notices.close();
          await dying.pool.end();
          entered(Date.now());
          await new Promise(() => undefined);
        },
        { gapMs: gap },
      )
      .catch(() => undefined);
    const diedAt = await inside;
    expect((await slotHolder(d.schema, "7"))?.startsWith("dead-replica#")).toBe(true);
    let wroteAt = 0;
    await survivor.run("7", async () => void (wroteAt = Date.now()), { gapMs: gap });
    // Not before the dead holder's last hold could lapse and its gap pass after it.
    expect(wroteAt - diedAt).toBeGreaterThanOrEqual(gap);
    expect((await slotHolder(d.schema, "7")) ?? null).toBeNull();
  }, 60_000);

  it("a stopped write gives up its place while it waits for the slot, and takes no turn", async () => {
    const d = await deployment();
    const ra = d.replica();
    const rb = d.replica();
    const a = new PostgresWriteSlots(ra.pool, d.s, ra.notices, "replica-a");
    const b = new PostgresWriteSlots(rb.pool, d.s, rb.notices, "replica-b");
    const sent: string[] = [];
    await a.run("7", async () => sent.push("a"), { gapMs: 600_000 });
    const work = new AbortController();
    const waiting = b.run("7", async () => sent.push("b"), { gapMs: 600_000, stops: [work.signal] });
    await sleep(50);
    work.abort(new Error("delivery cancelled"));
    await expectStoppedWith(waiting, "delivery cancelled");
    await expect(b.run("7", async () => sent.push("c"), { gapMs: 600_000, stops: [work.signal] })).rejects.toThrow(
      /stopped/,
    );
    expect(sent).toEqual(["a"]);
    expect(b.held()).toEqual([]);
  });
});

describe.skipIf(!postgresUp)("installation tokens shared through PostgreSQL", () => {
  it("three replicas asking at once mint one token, stored sealed", async () => {
    hub = await createHub({ tokens: { format: "stateless" } });
    const installationId = hub.control.installation(hub.env.SANDBOX_ORG)!.id;
    const config = loadConfig({ ...hub.env, PRIVATE_KEY_PATH: undefined, STEWARD_DATA_DIR: "/tmp/unused" });
    const d = await deployment();
    const replicas = [0, 1, 2].map((i) => {
      const r = d.replica();
      return createOctokitFactory({
        config,
        logger: silent,
        writeIntervalMs: 0,
        coordination: {
          ...inProcessCoordination(),
          tokens: createPostgresTokenCache({
            pool: r.pool,
            s: d.s,
            notices: r.notices,
            privateKey: config.privateKey,
            appId: config.appId,
            owner: `replica-${i}`,
          }),
        },
      });
    });
    const octokits = await Promise.all(replicas.map((r) => r.octokitFor(installationId)));
    const answers = await Promise.all(
      octokits.flatMap((o) => [1, 2].map(() => o.request("GET /installation/repositories"))),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(hub.state.tokens.minted.get(installationId)).toBe(1);
    const [token] = hub.state.tokens.installationTokens();
    expect(token!.length).toBeGreaterThan(400);

    // The database alone: no token, nothing token-shaped; only the app's key opens the sealed row.
    const rows = await withClient(
      async (c) =>
        (await c.query<{ name: string; sealed: string }>(`SELECT name, sealed FROM "${d.schema}".tokens`)).rows,
    );
    expect(rows).toHaveLength(1);
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(token!);
    expect(dump).not.toMatch(/gh[opsur]_[A-Za-z0-9]{36}|ghs_\d+_/);
    const { name, sealed } = rows[0]!;
    expect(open(deriveSealingKey(config.privateKey, config.appId), sealed, name)).toContain(token!);
    expect(open(deriveSealingKey(pem(), config.appId), sealed, name)).toBeUndefined();
  }, 60_000);

  it("renews ahead of expiry on one replica while the others keep the current token", async () => {
    let now = Date.parse("2030-01-01T00:00:00Z");
    const d = await deployment();
    const key = pem();
    const [a, b, c] = [0, 1, 2].map((i) => {
      const r = d.replica();
      return createPostgresTokenCache({
        pool: r.pool,
        s: d.s,
        notices: r.notices,
        privateKey: key,
        appId: 7,
        owner: `replica-${i}`,
        now: () => now,
      });
    });
    const minted = (token: string) =>
      `${token}|${new Date(now).toISOString()}|${new Date(now + 3_600_000).toISOString()}|all|checks!`;
    expect(await a!.get("42")).toBeUndefined(); // a holds the mint lease
    await a!.set("42", minted("ghs_first0000000000000000000000000000000"));
    expect(await b!.get("42")).toMatch(/^ghs_first/);
    now += 56 * 60_000; // past the renewal point (5 min before expiry)
    expect(await b!.get("42")).toBeUndefined(); // b renews
    expect(await c!.get("42")).toMatch(/^ghs_first/); // c keeps the current one meanwhile
    expect(b!.minting()).toEqual(["42"]);
    await b!.set("42", minted("ghs_second000000000000000000000000000000"));
    expect(b!.minting()).toEqual([]);
    expect(await c!.get("42")).toMatch(/^ghs_second/);
    expect(await a!.get("42")).toMatch(/^ghs_second/);
    for (const cache of [a, b, c]) await cache!.close();
  });

  it("a replica waiting for another's mint is handed its token once stored", async () => {
    const d = await deployment();
    const key = pem();
    const [a, b] = [0, 1].map((i) => {
      const r = d.replica();
      return createPostgresTokenCache({
        pool: r.pool,
        s: d.s,
        notices: r.notices,
        privateKey: key,
        appId: 7,
        owner: `r${i}`,
      });
    });
    expect(await a!.get("42")).toBeUndefined(); // a mints
    const waiting = b!.get("42");
    await sleep(100);
    const now = Date.now();
    await a!.set(
      "42",
      `ghs_minted000000000000000000000000000000|${new Date(now).toISOString()}|${new Date(now + 3_600_000).toISOString()}`,
    );
    expect(await waiting).toMatch(/^ghs_minted/);
    expect(b!.minting()).toEqual([]);
  });

  it("a minter that died stops blocking others once its lease lapses", async () => {
    const d = await deployment();
    const key = pem();
    const dying = d.replica();
    const dead = createPostgresTokenCache({
      pool: dying.pool,
      s: d.s,
      notices: dying.notices,
      privateKey: key,
      appId: 7,
      owner: "dead-replica",
    });
    expect(await dead.get("42")).toBeUndefined(); // it holds the lease, then its connections are gone for good
    await dying.notices.close();
    await dying.pool.end();
    const r = d.replica();
    const survivor = createPostgresTokenCache({
      pool: r.pool,
      s: d.s,
      notices: r.notices,
      privateKey: key,
      appId: 7,
      owner: "survivor",
    });
    const started = Date.now();
    expect(await survivor.get("42")).toBeUndefined();
    expect(survivor.minting()).toEqual(["42"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(MINT_LEASE_MS / 2);
    await survivor.close();
  }, 30_000);
});

describe.skipIf(!postgresUp)("replica registry in PostgreSQL", () => {
  it("lists live replicas with what each holds, and drops one that stopped", async () => {
    const d = await deployment();
    const ra = d.replica();
    const rb = d.replica();
    const a = startPostgresReplicaRegistry({
      pool: ra.pool,
      s: d.s,
      id: "host-a/101/one",
      holds: () => ({ writeSlots: ["7"], tokenMints: [] }),
    });
    const b = startPostgresReplicaRegistry({
      pool: rb.pool,
      s: d.s,
      id: "host-b/202/two",
      holds: () => ({ writeSlots: [], tokenMints: ["9"] }),
    });
    // A delivery leased by this process: counted for the replica whose id names this process.
    await d.store.deliveries.record(deliveryOf("push", examplePayload("push")));
    const claimed = await d.store.deliveries.claimDelivery(60_000);
    expect(claimed).toBeDefined();
    const [host, pid] = claimed!.token.split("/");
    const self = startPostgresReplicaRegistry({
      pool: ra.pool,
      s: d.s,
      id: `${host}/${pid}/self`,
      holds: () => ({ writeSlots: [], tokenMints: [] }),
    });
    await vi.waitFor(async () => expect(await a.alive()).toHaveLength(3), { timeout: 30_000, interval: 50 });
    const seen = await b.alive();
    expect(seen.find((e) => e.id === "host-a/101/one")).toMatchObject({ writeSlots: ["7"], deliveryLeases: 0 });
    expect(seen.find((e) => e.id === "host-b/202/two")).toMatchObject({ tokenMints: ["9"] });
    expect(seen.find((e) => e.id === `${host}/${pid}/self`)).toMatchObject({ deliveryLeases: 1, taskLeases: 0 });
    await b.stop();
    await self.stop();
    expect((await a.alive()).map((e) => e.id)).toEqual(["host-a/101/one"]);
    await a.stop();
  }, 60_000);
});
