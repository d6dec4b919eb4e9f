// Installation tokens shared by replicas through Redis: one mint for many replicas, sealed
// at rest (Redis alone yields no token; another app's key cannot open it), renewed ahead of
// expiry by one replica while the others keep the current token, a dead minter's lease
// lapsing so a survivor mints, and both token formats (classic 40 characters and the
// ~520-character `ghs_<app>_<JWT>`) through storage, masking and the API client.
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { generateKeyPairSync, randomBytes, randomInt } from "node:crypto";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { createSharedTokenCache, MINT_LEASE_MS } from "../../src/coordination/redis/token-cache.js";
import { deriveSealingKey, open, seal } from "../../src/coordination/token-crypto.js";
import { loadConfig } from "../../src/config/env.js";
import { scrub } from "../../src/log/redact.js";
import { silent } from "../engine/helpers.js";
import { dropPrefix, redisUp, redisUrl, uniquePrefix } from "./support.js";
import { alterOneCharacter } from "../support/tamper.js";

const clients: Redis[] = [];
const prefixes: string[] = [];
let hub: HubHandle | undefined;
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  for (const p of prefixes.splice(0)) await dropPrefix(p);
  await hub?.close();
  hub = undefined;
});

function redis(): Redis {
  const client = new Redis(redisUrl);
  clients.push(client);
  return client;
}

function prefix(): string {
  const p = uniquePrefix();
  prefixes.push(p);
  return p;
}

/** Every key and string value under `p`. */
async function contents(client: Redis, p: string): Promise<string> {
  const keys = await client.keys(`${p.replace(/[*?[\]\\]/g, "\\$&")}*`);
  const values = await Promise.all(
    keys.map(async (k) =>
      (await client.type(k)) === "string" ? await client.get(k) : JSON.stringify(await client.hgetall(k)),
    ),
  );
  return [...keys, ...values].join("\n");
}

const pem = () =>
  generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();

describe.skipIf(!redisUp)("installation tokens shared through Redis", () => {
  for (const format of ["classic", "stateless"] as const) {
    it(`three replicas asking at once mint one ${format} token, stored sealed`, async () => {
      hub = await createHub({ tokens: { format } });
      const installationId = hub.control.installation(hub.env.SANDBOX_ORG)!.id;
      const config = loadConfig({ ...hub.env, PRIVATE_KEY_PATH: undefined, STEWARD_DATA_DIR: "/tmp/unused" });
      const p = prefix();
      const replicas = [0, 1, 2].map(() =>
        createOctokitFactory({
          config,
          logger: silent,
          writeIntervalMs: 0,
          coordination: {
            ...inProcessCoordination(),
            tokens: createSharedTokenCache({
              client: redis(),
              prefix: p,
              privateKey: config.privateKey,
              appId: config.appId,
            }),
          },
        }),
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
      // Redis alone: no token, nothing token-shaped; only the app's key opens the sealed value.
      const stored = await contents(redis(), p);
      expect(stored).not.toContain(token!);
      // Token-shaped, not a bare prefix: the sealed values are random base64url, where "ghs_" can occur.
      expect(stored).not.toMatch(/gh[opsur]_[A-Za-z0-9]{36}|ghs_\d+_/);
      const [tokenKey] = await redis().keys(`${p.replace(/[*?[\]\\]/g, "\\$&")}token:*`);
      const sealed = (await redis().get(tokenKey!))!;
      expect(open(deriveSealingKey(config.privateKey, config.appId), sealed, tokenKey!)).toContain(token!);
      expect(open(deriveSealingKey(pem(), config.appId), sealed, tokenKey!)).toBeUndefined();
      expect(open(deriveSealingKey(config.privateKey, config.appId), sealed, `${tokenKey}x`)).toBeUndefined();

      // Masked wherever it could surface, whole (not just up to its first dot or underscore).
      const line = `request failed with token ${token} (header authorization: token ${token}).`;
      expect(scrub(line)).not.toMatch(/ghs_|eyJ/);
    });
  }

  it("renews ahead of expiry on one replica while the others keep the current token", async () => {
    let now = Date.parse("2030-01-01T00:00:00Z");
    const p = prefix();
    const key = pem();
    const [a, b, c] = [0, 1, 2].map((i) =>
      createSharedTokenCache({
        client: redis(),
        prefix: p,
        privateKey: key,
        appId: 7,
        owner: `replica-${i}`,
        now: () => now,
      }),
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
    for (const cache of [a, b, c]) cache!.close();
  });

  it("a minter that died stops blocking others once its lease lapses", async () => {
    const p = prefix();
    const key = pem();
    const dying = redis();
    const dead = createSharedTokenCache({ client: dying, prefix: p, privateKey: key, appId: 7, owner: "dead-replica" });
    expect(await dead.get("42")).toBeUndefined(); // it holds the lease, then its connection is gone for good
    dying.disconnect();
    const survivor = createSharedTokenCache({
      client: redis(),
      prefix: p,
      privateKey: key,
      appId: 7,
      owner: "survivor",
    });
    const started = Date.now();
    // No token and a lease held by the dead one: the survivor waits until the lease lapses, then mints itself.
    expect(await survivor.get("42")).toBeUndefined();
    expect(survivor.minting()).toEqual(["42"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(MINT_LEASE_MS / 2);
    survivor.close();
    dead.close();
  });

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
