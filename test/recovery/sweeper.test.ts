// The redelivery sweeper the service runs, against the sandbox hub: deliveries that a receiver
// refused are asked for again exactly once per failed attempt, sweeps never overlap, errors
// never escape, and the first sweep looks back further than the later ones.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { loadConfig } from "../../src/config/env.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/store.js";
import { FIRST_SWEEP_LOOKBACK_MS, startRedeliverySweeper, sweepLookbackMs } from "../../src/recovery/sweeper.js";
import type { OctokitFactory } from "../../src/api/types.js";

const logger = pino({ level: "silent" });

async function receiver(status: () => number): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const code = status();
      if (code >= 200 && code < 300) seen.push(String(req.headers["x-github-delivery"]));
      res.writeHead(code).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    seen,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe("startRedeliverySweeper", () => {
  let hub: HubHandle;
  let dir: string;
  let store: SqliteStore;
  let octokits: OctokitFactory;
  let answer = 500;
  let rx: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    rx = await receiver(() => answer);
    hub = await createHub({ webhookUrl: rx.url });
    dir = await mkdtemp(join(tmpdir(), "steward-sweeper-"));
    const config = loadConfig({ ...hub.env, PRIVATE_KEY: undefined, STEWARD_DATA_DIR: dir, LOG_LEVEL: "silent" });
    octokits = createOctokitFactory({ config, logger, coordination: inProcessCoordination(), writeIntervalMs: 0 });
    store = openSqliteStore(dir, { logger });
    await hub.control.settled();
  });
  afterAll(async () => {
    store?.close();
    await hub?.close();
    await rx?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("asks once for each delivery that never got a 2xx, and not for known or successful ones", async () => {
    answer = 500;
    const a = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "1\n" } });
    const b = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "b.txt": "2\n" } });
    await hub.control.settled();
    answer = 202;
    hub.control.pushFiles({ owner: "acme", repo: "web", files: { "c.txt": "3\n" } });
    await hub.control.settled();
    const failed = hub.control.deliveries().filter((d) => d.status_code === 500);
    expect(failed.length).toBeGreaterThanOrEqual(3); // installation.created plus two pushes
    // One failed delivery reached Steward's store anyway (it answered after the hub gave up).
    const known = failed[0]!.guid;
    const answered = hub.control
      .deliveries()
      .filter((d) => d.status_code === 202)
      .map((d) => d.guid);
    expect(answered.length).toBeGreaterThanOrEqual(1);
    const asked: string[] = [];

    const sweeper = startRedeliverySweeper({
      octokits,
      store: store.kv,
      isKnown: async (guid) => {
        asked.push(guid);
        return guid === known;
      },
      logger,
      intervalMs: 3_600_000,
    });
    try {
      // The sweep on start and an explicit one run as one: sweeps never overlap.
      const [first, joined] = [sweeper.runNow(), sweeper.runNow()];
      expect(joined).toBe(first);
      const result = (await first)!;
      await hub.control.settled();
      // The store is asked only about deliveries that never got a 2xx: each of those, none of the others.
      expect([...new Set(asked)].sort()).toEqual([...new Set(failed.map((d) => d.guid))].sort());
      for (const g of answered) expect(asked).not.toContain(g);
      const expected = failed
        .filter((d) => d.guid !== known)
        .map((d) => d.guid)
        .sort();
      expect([...result.requested].sort()).toEqual(expected);
      expect(result.failed).toEqual([]);
      expect([...rx.seen].filter((g) => expected.includes(g)).sort()).toEqual(expected);
      expect(rx.seen).not.toContain(known);
      expect(a.sha).not.toBe(b.sha);

      // Now every one got its 2xx: a second sweep asks for nothing.
      const again = await sweeper.runNow();
      expect(again?.requested).toEqual([]);
      const attempts = hub.control.deliveries().filter((d) => d.redelivery);
      expect(attempts.map((d) => d.guid).sort()).toEqual(expected);
    } finally {
      await sweeper.stop();
    }
  });

  it("asks again after a redelivery failed in turn, but never twice for one failed attempt", async () => {
    answer = 503;
    const before = hub.control.deliveries().length;
    hub.control.pushFiles({ owner: "acme", repo: "api", files: { "x.txt": "x\n" } });
    await hub.control.settled();
    const fresh = hub.control.deliveries().slice(before);
    expect(fresh.map((d) => d.event)).toContain("push");
    const guid = fresh.find((d) => d.event === "push")!.guid;
    // Only this push is unknown to the store; everything earlier reached Steward.
    const sweeper = startRedeliverySweeper({
      octokits,
      store: store.kv,
      isKnown: async (g) => g !== guid,
      logger,
      intervalMs: 3_600_000,
    });
    try {
      const first = await sweeper.runNow();
      expect(first?.requested).toEqual([guid]);
      await hub.control.settled();
      // The redelivery failed too (still 503): its own attempt is new, so one more request.
      answer = 202;
      const second = await sweeper.runNow();
      expect(second?.requested).toEqual([guid]);
      await hub.control.settled();
      const third = await sweeper.runNow();
      expect(third?.requested).toEqual([]);
      const tries = hub.control.deliveries().filter((d) => d.guid === guid);
      expect(tries.map((d) => d.status_code)).toEqual([503, 503, 202]);
    } finally {
      await sweeper.stop();
    }
  });

  it("logs and survives an API that fails; never throws", async () => {
    hub.control.setFault("GET /app/hook/deliveries", { errorRate: 1, status: 500 });
    const lines: string[] = [];
    const capture = pino({ level: "warn" }, { write: (l: string) => void lines.push(l) });
    const sweeper = startRedeliverySweeper({
      octokits: createOctokitFactory({
        config: loadConfig({ ...hub.env, PRIVATE_KEY: undefined, STEWARD_DATA_DIR: dir }),
        logger,
        coordination: inProcessCoordination(),
        retries: 0,
        writeIntervalMs: 0,
      }),
      store: store.kv,
      isKnown: async () => false,
      logger: capture,
      intervalMs: 3_600_000,
    });
    try {
      const result = await sweeper.runNow();
      expect(result?.requested).toEqual([]);
      expect(lines.join("")).toContain("redelivery sweep failed");
    } finally {
      await sweeper.stop();
      hub.control.clearFaults();
    }
  });

  it("looks back a day on its first sweep (deliveries sent while Steward was down), three intervals on later ones", async () => {
    expect(sweepLookbackMs(3_600_000, true)).toBe(FIRST_SWEEP_LOOKBACK_MS);
    expect(sweepLookbackMs(3_600_000, false)).toBe(3 * 3_600_000);
    expect(sweepLookbackMs(60_000, false)).toBe(3_600_000);
    const hour = 3_600_000;
    /** A push whose failed delivery is dated `hoursAgo` on the hub's clock; its guid. */
    const failedAgo = async (hoursAgo: number, repo: string): Promise<string> => {
      answer = 500;
      const before = hub.control.deliveries().length;
      hub.control.setClock(new Date(Date.now() - hoursAgo * hour));
      try {
        hub.control.pushFiles({ owner: "acme", repo, files: { [`lookback-${hoursAgo}.txt`]: `${Date.now()}\n` } });
        await hub.control.settled();
      } finally {
        hub.control.setClock(new Date());
      }
      return hub.control
        .deliveries()
        .slice(before)
        .find((d) => d.event === "push")!.guid;
    };
    const within = await failedAgo(5, "web");
    const tooOld = await failedAgo(30, "web");
    const ours = new Set([within, tooOld]);
    const sweeper = startRedeliverySweeper({
      octokits,
      store: store.kv,
      isKnown: async (g) => !ours.has(g),
      logger,
      intervalMs: hour,
    });
    try {
      answer = 202;
      const first = await sweeper.runNow();
      expect(first?.requested).toEqual([within]);
      await hub.control.settled();
      // After the first sweep three hours is the window: a failure of five hours ago is past it.
      const late = await failedAgo(6, "web");
      ours.add(late);
      answer = 202;
      const second = await sweeper.runNow();
      expect(second?.requested).toEqual([]);
      expect(second?.scanned).toBeGreaterThan(0);
      expect(
        hub.control
          .deliveries()
          .filter((d) => d.redelivery)
          .map((d) => d.guid),
      ).not.toContain(late);
    } finally {
      await sweeper.stop();
    }
  });
});
