// What replicas share beyond the store (src/coordination/), one suite over every backend that
// can hold it: Redis standalone, Redis Cluster (three primaries started here from the machine's
// redis-server), Valkey (the machine's valkey-server) and PostgreSQL. The write slot of an installation (one write at a time across
// replicas, spaced from the previous answer, a dead holder's slot taken over with its gap kept,
// a stopped turn given up), installation tokens shared sealed and minted once (single flight,
// renewal ahead of expiry, a dead minter's lease lapsing), and the registry of live replicas
// with what each holds. Every "replica" is a connection (a pool) of its own; a dead one is one
// whose connections are gone mid-write (no renewal, no release). Locks, job leases and
// single-flight syncs are rows of the store's handler state: the store's conformance suite
// (test/store/contract.test.ts) covers them on every backend.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createHash, generateKeyPairSync, randomBytes, randomInt } from "node:crypto";
import type pg from "pg";
import type { WriteSlots } from "../../src/api/types.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { loadConfig } from "../../src/config/env.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import {
  createSealedTokenCache,
  MINT_LEASE_MS,
  type SealedTokenStore,
  type SharedTokenCache,
} from "../../src/coordination/shared-token-cache.js";
import { deriveSealingKey, open, seal } from "../../src/coordination/token-crypto.js";
import { RedisWriteSlots, slotKey } from "../../src/coordination/redis/write-slots.js";
import { createSharedTokenCache, redisSealedTokens } from "../../src/coordination/redis/token-cache.js";
import { startReplicaRegistry } from "../../src/coordination/redis/replicas.js";
import type { ReplicaHolds, ReplicaRegistry } from "../../src/coordination/replicas.js";
import { Notices } from "../../src/coordination/postgres/notices.js";
import { PostgresWriteSlots, WRITE_SLOT_TTL_MS } from "../../src/coordination/postgres/write-slots.js";
import { WRITE_SLOT_TTL_MS as REDIS_WRITE_SLOT_TTL_MS } from "../../src/coordination/redis/write-slots.js";
import { createPostgresTokenCache, postgresSealedTokens } from "../../src/coordination/postgres/token-cache.js";
import { startPostgresReplicaRegistry } from "../../src/coordination/postgres/replicas.js";
import { connectRedis, type RedisClient } from "../../src/store/redis/connect.js";
import { createPool, ident, libpqUrl } from "../../src/store/postgres/connect.js";
import type { StewardStore } from "../../src/store/contract.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { scrub } from "../../src/log/redact.js";
import { deliveryOf, examplePayload, silent } from "../engine/helpers.js";
import { expectStoppedWith } from "../support/stopped.js";
import { alterOneCharacter } from "../support/tamper.js";
import { redisStores, redisUp, redisUrl, scanKeys, prefixPattern } from "../redis/support.js";
import { clusterAvailable, startRedisCluster, type TestCluster } from "../redis/cluster-support.js";
import { startValkey, valkeyAvailable, type TestValkey } from "../redis/valkey-support.js";
import { postgresStores, postgresUp, postgresUrl, withClient } from "../postgres/support.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const INTERVAL = 300;

interface TokenCacheOptions {
  privateKey: string;
  appId: number;
  owner?: string;
  now?: () => number;
}

/** One replica of a deployment: connections of its own. */
interface Replica {
  writeSlots(owner: string): WriteSlots & { held(): string[] };
  tokens(opts: TokenCacheOptions): SharedTokenCache;
  /** Where its token cache keeps sealed tokens and mint leases. */
  sealedTokens(): SealedTokenStore;
  registry(opts: { id: string; holds(): ReplicaHolds }): ReplicaRegistry;
  /** Its connections gone for good, as after kill -9: no renewal, no release. */
  kill(): Promise<void>;
}

/** What replicas of one deployment share: a store, and the backend's own view for assertions. */
interface Deployment {
  store: StewardStore;
  replica(): Promise<Replica>;
  /** Who holds the installation's write slot now, as stored. */
  slotHolder(installation: string): Promise<string | undefined>;
  /** Everything the deployment keeps, as text (to look for tokens in it). */
  dump(): Promise<string>;
  /** Each stored token: the name it is sealed under, and the sealed value. */
  sealedTokens(): Promise<{ name: string; sealed: string }[]>;
  dispose(): Promise<void>;
}

function redisDeployment(url: string): () => Promise<Deployment> {
  return async () => {
    const stores = redisStores(url);
    const store = await stores.open();
    const { prefix } = stores;
    const clients: RedisClient[] = [];
    const connect = async () => {
      const c = await connectRedis(url, undefined, "steward-test-coordination");
      clients.push(c);
      return c;
    };
    const inspector = await connect();
    const tokenKeys = async () =>
      (await scanKeys(inspector, prefixPattern(prefix))).filter((k) => k.startsWith(`${prefix}token:`));
    return {
      store,
      async replica() {
        const client = await connect();
        return {
          writeSlots: (owner) => new RedisWriteSlots(client, prefix, owner),
          tokens: (opts) => createSharedTokenCache({ client, prefix, ...opts }),
          sealedTokens: () => redisSealedTokens(client, prefix),
          registry: (opts) => startReplicaRegistry({ client, prefix, ...opts }),
          kill: async () => client.disconnect(),
        };
      },
      slotHolder: async (installation) => (await inspector.hget(slotKey(prefix, installation), "holder")) ?? undefined,
      async dump() {
        const keys = await scanKeys(inspector, prefixPattern(prefix));
        const values = await Promise.all(
          keys.map(async (k) =>
            (await inspector.type(k)) === "string"
              ? await inspector.get(k)
              : JSON.stringify(await inspector.hgetall(k)),
          ),
        );
        return [...keys, ...values].join("\n");
      },
      sealedTokens: async () =>
        Promise.all((await tokenKeys()).map(async (name) => ({ name, sealed: (await inspector.get(name))! }))),
      async dispose() {
        for (const c of clients.splice(0)) c.disconnect();
        await stores.dispose();
      },
    };
  };
}

async function postgresDeployment(): Promise<Deployment> {
  const stores = postgresStores();
  const store = await stores.open();
  const { schema } = stores;
  const s = ident(schema);
  const replicas: { pool: pg.Pool; notices: Notices }[] = [];
  const query = <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) =>
    withClient(async (c) => (await c.query<R>(sql, params)).rows);
  return {
    store,
    async replica() {
      const pool = createPool(postgresUrl, { name: "steward-test-coordination", max: 3 }, undefined);
      const notices = new Notices(
        pool,
        { connectionString: libpqUrl(postgresUrl) },
        `steward_coord:${schema}`.slice(0, 63),
        undefined,
      );
      replicas.push({ pool, notices });
      return {
        writeSlots: (owner) => new PostgresWriteSlots(pool, s, notices, owner),
        tokens: (opts) => createPostgresTokenCache({ pool, s, notices, ...opts }),
        sealedTokens: () => postgresSealedTokens(pool, s, notices),
        registry: (opts) => startPostgresReplicaRegistry({ pool, s, ...opts }),
        async kill() {
          await notices.close();
          await pool.end();
        },
      };
    },
    slotHolder: async (installation) =>
      (
        await query<{ holder: string | null }>(`SELECT holder FROM ${s}.write_slots WHERE installation = $1`, [
          installation,
        ])
      )[0]?.holder ?? undefined,
    dump: async () => JSON.stringify(await query(`SELECT * FROM ${s}.tokens`)),
    sealedTokens: () => query<{ name: string; sealed: string }>(`SELECT name, sealed FROM ${s}.tokens`),
    async dispose() {
      for (const r of replicas.splice(0)) {
        await r.notices.close().catch(() => undefined);
        await r.pool.end().catch(() => undefined);
      }
      await stores.dispose();
    },
  };
}

const pem = () =>
  generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();

function contract(makeDeployment: () => Promise<Deployment>, writeSlotTtlMs: number) {
  let d: Deployment;
  let hub: HubHandle | undefined;
  const caches: SharedTokenCache[] = [];
  const deployment = async () => (d = await makeDeployment());
  afterEach(async () => {
    for (const c of caches.splice(0)) await c.close().catch(() => undefined);
    await d?.dispose();
    await hub?.close();
    hub = undefined;
  });
  const tokens = (r: Replica, opts: TokenCacheOptions) => {
    const cache = r.tokens(opts);
    caches.push(cache);
    return cache;
  };

  describe("write slots", () => {
    it("a write longer than the hold keeps the slot; the next waits the interval after its answer", async () => {
      await deployment();
      const a = (await d.replica()).writeSlots("replica-a");
      const b = (await d.replica()).writeSlots("replica-b");
      let answeredAt = 0;
      const slow = a.run(
        "7",
        async () => {
          await sleep(writeSlotTtlMs + 1_500);
          answeredAt = Date.now();
        },
        { gapMs: INTERVAL },
      );
      // A holds the slot before B asks (a fixed sleep lets B win the race on a loaded machine).
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
      // The server and this process read the same host's clock; a millisecond of rounding.
      expect(startedAt - answeredAt).toBeGreaterThanOrEqual(INTERVAL - 2);
      expect(a.held()).toEqual([]);
    }, 90_000);

    it("writes of one process go one at a time, in order", async () => {
      await deployment();
      const slots = (await d.replica()).writeSlots("replica-a");
      const order: number[] = [];
      let running = 0;
      let most = 0;
      await Promise.all(
        [1, 2, 3, 4].map((n) =>
          slots.run(
            "7",
            async () => {
              most = Math.max(most, ++running);
              order.push(n);
              await sleep(10);
              running--;
            },
            { gapMs: 50 },
          ),
        ),
      );
      expect(order).toEqual([1, 2, 3, 4]);
      expect(most).toBe(1);
    });

    it("writes of several replicas go one at a time, each the interval after the previous answer", async () => {
      await deployment();
      const slots = await Promise.all([0, 1, 2].map(async (i) => (await d.replica()).writeSlots(`replica-${i}`)));
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
      for (let i = 1; i < spans.length; i++)
        expect(spans[i]!.start - spans[i - 1]!.end).toBeGreaterThanOrEqual(100 - 2);
    }, 60_000);

    it("a write asked `first` goes ahead of this process's queued writes of the installation", async () => {
      await deployment();
      const slots = (await d.replica()).writeSlots("replica-a");
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
      await deployment();
      const dying = await d.replica();
      const dead = dying.writeSlots("dead-replica");
      const survivor = (await d.replica()).writeSlots("survivor");
      const gap = 2_000;
      let entered!: (at: number) => void;
      const inside = new Promise<number>((r) => (entered = r));
      // The dead one's write never ends and its connections are gone: no renewal, no release.
      void dead
        .run(
          "7",
          async () => {
            await dying.kill();
            entered(Date.now());
            await new Promise(() => undefined);
          },
          { gapMs: gap },
        )
        .catch(() => undefined);
      const diedAt = await inside;
      expect((await d.slotHolder("7"))?.startsWith("dead-replica#")).toBe(true);
      const before = Date.now();
      let wroteAt = 0;
      await survivor.run("7", async () => void (wroteAt = Date.now()), { gapMs: gap });
      expect(wroteAt).toBeGreaterThan(0);
      // Not before the dead holder's hold could lapse, nor before its gap passed after it.
      expect(wroteAt - before).toBeGreaterThanOrEqual(writeSlotTtlMs - 1_100);
      expect(wroteAt - diedAt).toBeGreaterThanOrEqual(gap);
      expect((await d.slotHolder("7")) ?? null).toBeNull();
    }, 60_000);

    it("a stopped write gives up its place while it waits for the slot, and takes no turn", async () => {
      await deployment();
      // Ten minutes between writes: a write that waited out its turn would never finish here.
      const a = (await d.replica()).writeSlots("replica-a");
      const b = (await d.replica()).writeSlots("replica-b");
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

  describe("installation tokens shared", () => {
    for (const format of ["classic", "stateless"] as const) {
      it(`three replicas asking at once mint one ${format} token, stored sealed`, async () => {
        hub = await createHub({ tokens: { format } });
        const installationId = hub.control.installation(hub.env.SANDBOX_ORG)!.id;
        const config = loadConfig({ ...hub.env, PRIVATE_KEY_PATH: undefined, STEWARD_DATA_DIR: "/tmp/unused" });
        await deployment();
        const replicas = await Promise.all(
          [0, 1, 2].map(async (i) =>
            createOctokitFactory({
              config,
              logger: silent,
              writeIntervalMs: 0,
              coordination: {
                ...inProcessCoordination(),
                tokens: tokens(await d.replica(), {
                  privateKey: config.privateKey,
                  appId: config.appId,
                  owner: `replica-${i}`,
                }),
              },
            }),
          ),
        );
        const octokits = await Promise.all(replicas.map((r) => r.octokitFor(installationId)));
        const answers = await Promise.all(
          octokits.flatMap((o) => [1, 2].map(() => o.request("GET /installation/repositories"))),
        );
        expect(answers.every((a) => a.status === 200)).toBe(true);
        expect(hub.state.tokens.minted.get(installationId)).toBe(1);

        const [token] = hub.state.tokens.installationTokens();
        if (format === "stateless") {
          expect(token!.length).toBeGreaterThan(400);
          expect(token).toMatch(/^ghs_\d+_[\w-]+\.[\w-]+\.[\w-]+$/);
        } else {
          expect(token).toHaveLength(40);
        }
        // The store alone: no token, nothing token-shaped; only the app's key opens the sealed value.
        const stored = await d.dump();
        expect(stored).not.toContain(token!);
        // Token-shaped, not a bare prefix: the sealed values are random base64url, where "ghs_" can occur.
        expect(stored).not.toMatch(/gh[opsur]_[A-Za-z0-9]{36}|ghs_\d+_/);
        const sealedTokens = await d.sealedTokens();
        expect(sealedTokens).toHaveLength(1);
        const { name, sealed } = sealedTokens[0]!;
        expect(open(deriveSealingKey(config.privateKey, config.appId), sealed, name)).toContain(token!);
        expect(open(deriveSealingKey(pem(), config.appId), sealed, name)).toBeUndefined();
        expect(open(deriveSealingKey(config.privateKey, config.appId), sealed, `${name}x`)).toBeUndefined();

        // Masked wherever it could surface, whole (not just up to its first dot or underscore).
        const line = `request failed with token ${token} (header authorization: token ${token}).`;
        expect(scrub(line)).not.toMatch(/ghs_|eyJ/);
      }, 60_000);
    }

    it("renews ahead of expiry on one replica while the others keep the current token", async () => {
      let now = Date.parse("2030-01-01T00:00:00Z");
      await deployment();
      const key = pem();
      const [a, b, c] = await Promise.all(
        [0, 1, 2].map(async (i) =>
          tokens(await d.replica(), { privateKey: key, appId: 7, owner: `replica-${i}`, now: () => now }),
        ),
      );
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
    });

    it("a replica waiting for another's mint is handed its token once stored", async () => {
      await deployment();
      const key = pem();
      const [a, b] = await Promise.all(
        [0, 1].map(async (i) => tokens(await d.replica(), { privateKey: key, appId: 7, owner: `r${i}` })),
      );
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

    it("a replica that found no token and takes the lease just after another's mint uses that token", async () => {
      await deployment();
      const key = pem();
      const a = tokens(await d.replica(), { privateKey: key, appId: 7, owner: "a" });
      expect(await a.get("42")).toBeUndefined(); // a mints
      // b reads no token; before its acquire reaches the store, a stores its token and lets the lease go.
      const store = (await d.replica()).sealedTokens();
      let raced = false;
      const b = createSealedTokenCache(
        {
          ...store,
          async acquire(lease, owner, ttlMs) {
            if (!raced) {
              raced = true;
              const now = Date.now();
              await a.set(
                "42",
                `ghs_minted000000000000000000000000000000|${new Date(now).toISOString()}|${new Date(now + 3_600_000).toISOString()}`,
              );
            }
            return store.acquire(lease, owner, ttlMs);
          },
        },
        { privateKey: key, appId: 7, owner: "b" },
      );
      caches.push(b);
      expect(await b.get("42")).toMatch(/^ghs_minted/);
      expect(raced).toBe(true);
      expect(b.minting()).toEqual([]);
      // The lease b took to find the token is free again: the next renewal is not held up.
      const lease = store.names(`42:${createHash("sha256").update("42").digest("hex").slice(0, 16)}`).lease;
      expect(await store.acquire(lease, "c", MINT_LEASE_MS)).toBe(true);
      expect(await store.acquire(lease, "d", MINT_LEASE_MS)).toBe(false);
    });

    it("a minter that died stops blocking others once its lease lapses", async () => {
      await deployment();
      const key = pem();
      const dying = await d.replica();
      // Closed without waiting: its connections are gone (a Cluster client would queue the release forever).
      const dead = dying.tokens({ privateKey: key, appId: 7, owner: "dead-replica" });
      expect(await dead.get("42")).toBeUndefined(); // it holds the lease, then its connections are gone for good
      await dying.kill();
      const survivor = tokens(await d.replica(), { privateKey: key, appId: 7, owner: "survivor" });
      const started = Date.now();
      // No token and a lease held by the dead one: the survivor waits until the lease lapses, then mints itself.
      expect(await survivor.get("42")).toBeUndefined();
      expect(survivor.minting()).toEqual(["42"]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(MINT_LEASE_MS / 2);
      void dead.close().catch(() => undefined);
    }, 30_000);
  });

  describe("replica registry", () => {
    it("lists live replicas with what each holds, and drops one that stopped", async () => {
      await deployment();
      const ra = await d.replica();
      const rb = await d.replica();
      const a = ra.registry({ id: "host-a/101/one", holds: () => ({ writeSlots: ["7"], tokenMints: [] }) });
      const b = rb.registry({ id: "host-b/202/two", holds: () => ({ writeSlots: [], tokenMints: ["9"] }) });
      // A delivery leased by this process: counted for the replica whose id names this process.
      await d.store.deliveries.record(deliveryOf("push", examplePayload("push")));
      const claimed = await d.store.deliveries.claimDelivery(60_000);
      expect(claimed).toBeDefined();
      const [host, pid] = claimed!.token.split("/");
      const self = ra.registry({ id: `${host}/${pid}/self`, holds: () => ({ writeSlots: [], tokenMints: [] }) });
      try {
        await vi.waitFor(async () => expect(await a.alive()).toHaveLength(3), { timeout: 30_000, interval: 50 });
        const seen = await b.alive();
        expect(seen.find((e) => e.id === "host-a/101/one")).toMatchObject({ writeSlots: ["7"], deliveryLeases: 0 });
        expect(seen.find((e) => e.id === "host-b/202/two")).toMatchObject({ tokenMints: ["9"] });
        expect(seen.find((e) => e.id === `${host}/${pid}/self`)).toMatchObject({ deliveryLeases: 1, taskLeases: 0 });
        await b.stop();
        await self.stop();
        expect((await a.alive()).map((e) => e.id)).toEqual(["host-a/101/one"]);
      } finally {
        await Promise.all([a, b, self].map((r) => r.stop().catch(() => undefined)));
      }
    }, 60_000);
  });
}

describe.skipIf(!redisUp)("coordination on Redis", () => contract(redisDeployment(redisUrl), REDIS_WRITE_SLOT_TTL_MS));
describe.skipIf(!postgresUp)("coordination on PostgreSQL", () => contract(postgresDeployment, WRITE_SLOT_TTL_MS));
describe.skipIf(!clusterAvailable)("coordination on a Redis Cluster", () => {
  // One cluster for the suite; each test its own prefix, so its keys hash to a slot of their own.
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 120_000);
  afterAll(async () => cluster?.stop());
  contract(() => redisDeployment(cluster.url)(), REDIS_WRITE_SLOT_TTL_MS);
});
describe.skipIf(!valkeyAvailable)("coordination on Valkey", () => {
  let valkey: TestValkey;
  beforeAll(async () => {
    valkey = await startValkey();
  }, 60_000);
  afterAll(async () => valkey?.stop());
  contract(() => redisDeployment(valkey.url)(), REDIS_WRITE_SLOT_TTL_MS);
});

// Of the tokens alone, whatever keeps them.
describe("installation tokens at rest and in logs", () => {
  it("masks both token formats by their shape alone (never registered)", () => {
    const part = (bytes: number) => randomBytes(bytes).toString("base64url");
    const classic = `ghs_${part(27).replace(/[-_]/g, "x").slice(0, 36)}`;
    const stateless = `ghs_${1000 + randomInt(900_000)}_eyJ${part(30)}.eyJ${part(150)}.${part(256)}`;
    expect(stateless.length).toBeGreaterThan(500);
    for (const token of [classic, stateless]) {
      const line = `failed with ${token}. Retry with "${token}"`;
      const masked = scrub(line);
      expect(masked).not.toContain(token.slice(0, 12));
      expect(masked).not.toContain(token.slice(-12));
    }
  });

  it("sealing is authenticated: a changed byte or a foreign key opens nothing", () => {
    const k = deriveSealingKey(pem(), 1);
    const sealed = seal(k, "ghs_" + "a".repeat(36), "k1");
    expect(open(k, sealed, "k1")).toBe("ghs_" + "a".repeat(36));
    const flipped = alterOneCharacter(sealed);
    expect(open(k, flipped, "k1")).toBeUndefined();
    expect(open(deriveSealingKey(pem(), 1), sealed, "k1")).toBeUndefined();
    expect(open(k, "garbage", "k1")).toBeUndefined();
  });
});
