// `steward deliveries` against the Redis store the service uses (STEWARD_REDIS_URL): the same
// list, show (every attempt with its error), replay, bulk replay of dead ones and --json.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { runCli } from "../cli/capture.js";
import { openRedisStore } from "../../src/store/redis/store.js";
import { defaultRedisPrefix } from "../../src/store/redis/keys.js";
import { seedDoneAndDead } from "../engine/seed-deliveries.js";
import { redisUp, redisUrl } from "./support.js";

// A database of its own: the CLI, like the service, uses the default key prefix.
const cliDbUrl = redisUrl.replace(/\/\d*$/, "") + "/14";
const saved = { redis: process.env.STEWARD_REDIS_URL, dir: process.env.STEWARD_DATA_DIR };

/** Removes the default prefix's keys from the CLI's database (support.dropPrefix works on the test database). */
async function dropAll(): Promise<void> {
  const { Redis } = await import("ioredis");
  const client = new Redis(cliDbUrl);
  try {
    const keys = await client.keys(`${defaultRedisPrefix.replace(/[{}]/g, (c) => `\\${c}`)}*`);
    if (keys.length) await client.del(...keys);
  } finally {
    client.disconnect();
  }
}

beforeAll(async () => {
  if (redisUp) await dropAll();
});
afterAll(async () => {
  if (redisUp) await dropAll();
});
afterEach(() => {
  for (const [name, value] of [
    ["STEWARD_REDIS_URL", saved.redis],
    ["STEWARD_DATA_DIR", saved.dir],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  vi.restoreAllMocks();
});

function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  process.env.STEWARD_REDIS_URL = cliDbUrl;
  process.env.STEWARD_DATA_DIR = "/nonexistent/steward-data";
  return runCli(["deliveries", ...args]);
}

describe.skipIf(!redisUp)("steward deliveries with STEWARD_REDIS_URL", () => {
  it("lists, shows every attempt, replays one and bulk-replays the dead, as text and --json", async () => {
    const store = await openRedisStore(cliDbUrl);
    await seedDoneAndDead(store, "r", { engine: { retry: { baseMs: 1, maxMs: 5 } } });
    expect(await store.browse.countDead()).toBe(1);
    await store.close();

    const listed = await cli("list");
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/r-push\s+done/);
    expect(listed.out).toMatch(/r-run\s+dead/);

    const dead = await cli("list", "--status", "dead", "--json");
    const rows = JSON.parse(dead.out) as { id: string; status: string; payload?: unknown }[];
    expect(rows.map((r) => [r.id, r.status])).toEqual([["r-run", "dead"]]);
    expect(rows[0]!.payload).toBeUndefined();
    expect(JSON.parse((await cli("list", "--since", "2999-01-01T00:00:00Z", "--json")).out)).toEqual([]);

    const shown = await cli("show", "r-run");
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(/rerun\s+attempt 1\s+failed\s+error: 503 Service Unavailable \(attempt 1\)/);
    expect(shown.out).toMatch(/rerun\s+attempt 2\s+failed\s+error: 503 Service Unavailable \(attempt 2\)/);
    const shownJson = JSON.parse((await cli("show", "r-run", "--json")).out) as {
      attempts: { attempt: number; detail: string }[];
    };
    expect(shownJson.attempts.map((a) => a.attempt)).toEqual([1, 2]);

    const bulk = await cli("replay", "--status", "dead", "--since", "1h", "--json");
    expect(bulk.code).toBe(0);
    expect(JSON.parse(bulk.out)).toEqual({ replayed: ["r-run"], running: [], missing: [] });
    expect((await cli("list", "--status", "dead")).out).toMatch(/^no deliveries match/);
    const after = await openRedisStore(cliDbUrl);
    try {
      expect(await after.browse.countDead()).toBe(0);
      expect((await after.deliveries.getDelivery("r-run"))?.delivery.status).toBe("queued");
    } finally {
      await after.close();
    }

    const one = await cli("replay", "r-push");
    expect(one.code).toBe(0);
    expect(one.out).toContain("delivery r-push queued again");
    const missing = await cli("replay", "nope");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("no stored delivery nope");
  });
});
