// The console's cluster panel on Redis: two replicas of one deployment (this process and a child
// process, one key prefix), an owner's overview lists both with what each holds and its last
// heartbeat, as the replica registry in Redis has them; a replica that stops drops out; a member
// does not see the panel.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSteward, type Steward } from "../../src/app.js";
import { loadConfig } from "../../src/config/env.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { replicaKeys } from "../../src/coordination/redis/replicas.js";
import { silent } from "../engine/helpers.js";
import { spawnSteward, type Child } from "../torture/crash-harness.js";
import { signIn } from "../console/session.js";
import { REPLICA_FIXTURE } from "../support/replicas-harness.js";
import { dropPrefix, redisUp, redisUrl, uniquePrefix } from "./support.js";

let hub: HubHandle;
let steward: Steward;
let child: Child | undefined;
let dataDir: string;
let redis: Redis;
const prefix = uniquePrefix();

beforeAll(async () => {
  if (!redisUp) return;
  hub = await createHub();
  dataDir = await mkdtemp(join(tmpdir(), "steward-cluster-"));
  const config = loadConfig({
    APP_ID: hub.env.APP_ID,
    PRIVATE_KEY_PATH: hub.env.PRIVATE_KEY_PATH,
    WEBHOOK_SECRET: hub.env.WEBHOOK_SECRET,
    GITHUB_API_URL: hub.env.GITHUB_API_URL,
    GITHUB_CLIENT_ID: hub.env.GITHUB_CLIENT_ID,
    GITHUB_CLIENT_SECRET: hub.env.GITHUB_CLIENT_SECRET,
    STEWARD_REDIS_URL: redisUrl,
    STEWARD_DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
  });
  steward = await createSteward({ config, logger: silent, redis: { prefix } });
  child = spawnSteward(
    REPLICA_FIXTURE,
    hub,
    { STEWARD_REDIS_URL: redisUrl, STEWARD_TEST_REDIS_PREFIX: prefix },
    "replica B",
    () => undefined,
  );
  await child.url;
  redis = new Redis(redisUrl);
}, 60_000);

afterAll(async () => {
  if (!redisUp) return;
  child?.proc.kill("SIGKILL");
  await child?.exited;
  await steward?.close();
  await hub?.close();
  redis?.disconnect();
  await dropPrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

/** The cluster panel's rows: replica id attribute and cell texts. */
function replicaRows(page: string): { id: string; cells: string[] }[] {
  const section = /<h2 id="cluster">[\s\S]*?<\/section>/.exec(page)?.[0] ?? "";
  return [...section.matchAll(/<tr data-replica="([^"]+)">([\s\S]*?)<\/tr>/g)].map((m) => ({
    id: m[1]!,
    cells: [...m[2]!.matchAll(/<td>([\s\S]*?)<\/td>/g)].map((c) =>
      c[1]!
        // A time is read in its absolute form (its title), to the second.
        .replace(/<time[^>]*title="([^"]+)"[^>]*>[^<]*<\/time>/g, "$1")
        .replace(/<[^>]+>/g, "")
        .replace(/\s+/g, " ")
        .trim(),
    ),
  }));
}

describe.skipIf(!redisUp)("the console's cluster panel", () => {
  it("lists both replicas with their holds and last heartbeat, as Redis has them, and drops one that stopped", async () => {
    const owner = await signIn(steward.url, "octo-admin");
    let page = "";
    await expect
      .poll(
        async () => {
          page = (await owner.visit("/console")).text;
          return replicaRows(page).length;
        },
        { timeout: 45_000 },
      )
      .toBe(2);
    // The registry's entries just before and just after the page is made: its heartbeats lie between
    // (replicas beat every second, so a later read alone can be any number of beats ahead on a loaded machine).
    const entries = async () => {
      const ids = await redis.zrange(replicaKeys(prefix).index, 0, -1);
      return new Map(
        await Promise.all(
          ids.map(
            async (id) =>
              [id, JSON.parse((await redis.get(replicaKeys(prefix).entry(id)))!) as { seenAt: number }] as const,
          ),
        ),
      );
    };
    const seenBefore = await entries();
    page = (await owner.visit("/console")).text;
    const seenAfter = await entries();
    expect(page).toContain('Replicas alive: <strong data-k="replicas">2</strong>');
    const rows = replicaRows(page);
    const registered = await redis.zrange(replicaKeys(prefix).index, 0, -1);
    expect(rows.map((r) => r.id).sort()).toEqual([...registered].sort());
    const byPid = new Map(rows.map((r) => [Number(r.cells[1]), r]));
    expect([...byPid.keys()].sort()).toEqual([process.pid, child!.proc.pid!].sort());
    const self = byPid.get(process.pid)!;
    expect(self.cells[0]).toContain("(serving this page)");
    expect(byPid.get(child!.proc.pid!)!.cells[0]).not.toContain("serving this page");
    for (const r of rows) {
      // write slots, token mints, delivery leases, task leases, started, last heartbeat
      expect(r.cells[2]).toMatch(/^(none|[\d, ]+( and \d+ others?)?|\d+ others?)$/);
      expect(r.cells[4]).toMatch(/^\d+$/);
      expect(r.cells[5]).toMatch(/^\d+$/);
      const heartbeat = Date.parse(r.cells[7]!.replace(" UTC", "Z").replace(" ", "T"));
      // The page's heartbeat is one the registry wrote while the page was made (shown to the second).
      expect(heartbeat).toBeGreaterThan(seenBefore.get(r.id)!.seenAt - 1_000);
      expect(heartbeat).toBeLessThanOrEqual(seenAfter.get(r.id)!.seenAt);
    }

    const member = await signIn(steward.url, "dev-dana");
    expect((await member.visit("/console")).text).not.toContain('id="cluster"');

    child!.proc.kill("SIGTERM");
    await child!.exited;
    await expect
      .poll(async () => replicaRows((await owner.visit("/console")).text).map((r) => Number(r.cells[1])), {
        timeout: 45_000,
      })
      .toEqual([process.pid]);
  }, 120_000);
});
