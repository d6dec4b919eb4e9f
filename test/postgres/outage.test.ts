// PostgreSQL going away under a running Steward: the intake answers 503 (never 202 then lost)
// and /readyz fails, and both recover by themselves once the database is reachable again,
// without a restart. The outage is a TCP relay on 127.0.0.1 between Steward and the machine's
// shared PostgreSQL (which other tests use, so it is never stopped): cut, every connection
// through it is reset and new ones are refused; restored, it relays again.
import { createServer, connect, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { appKey } from "../support/app-key.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";
import { dropSchema, postgresUp, postgresUrl, uniqueSchema, withClient } from "./support.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!
  .examples[0]!;
const pushWithInstallation = JSON.stringify({ ...push, installation: { id: 77, node_id: "MDIz" } });

const scope = perTest();

const readyz = async (url: string) => (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(20_000) })).status;

/** A relay to the shared PostgreSQL that the test cuts and restores. */
async function relay(): Promise<{ url: string; cut(): void; restore(): void; close(): Promise<void> }> {
  const target = new URL(postgresUrl);
  const sockets = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    client.on("error", () => undefined);
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        sockets.delete(s);
        // One side gone: the other goes too, as a broken link would take both.
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const url = new URL(postgresUrl);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe.skipIf(!postgresUp)("PostgreSQL outage", { timeout: 180_000 }, () => {
  it("answers 503 and fails readiness while the database is unreachable; both recover by themselves", async () => {
    const schema = uniqueSchema();
    scope.stopAfter(schema, dropSchema);
    const link = scope.stopAfter(await relay(), (l) => l.close());
    const { logger } = collectingLogger("warn");
    const steward = await scope.steward({
      config: testConfig({ privateKey: appKey().privateKey, postgresUrl: link.url }),
      postgres: { schema },
      logger,
      handlers: [],
      // Probed more often than in service (1 s while failing, 10 s while not): the test waits for the probes.
      readinessProbes: { failingMs: 200, healthyMs: 500 },
    });
    const accepted: string[] = [];
    const post = async () => {
      const id = deliveryId();
      const { status } = await postDelivery(steward.url, { body: pushWithInstallation, id, event: "push" });
      if (status === 202) accepted.push(id);
      return status;
    };
    expect(await readyz(steward.url)).toBe(200);
    expect(await post()).toBe(202);

    link.cut();
    // Each delivery while it is cut is refused, never accepted and dropped.
    for (let i = 0; i < 3; i++) expect(await post()).toBe(503);
    await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(503), { timeout: 60_000, interval: 200 });

    link.restore();
    await vi.waitFor(async () => expect(await readyz(steward.url)).toBe(200), { timeout: 60_000, interval: 200 });
    await vi.waitFor(async () => expect(await post()).toBe(202), { timeout: 60_000, interval: 200 });
    for (let i = 0; i < 3; i++) expect(await post()).toBe(202);

    // Everything answered 202 is in the database, read past Steward. (A 503 may have been
    // recorded too, its commit's answer lost with the link: GitHub's redelivery then gets a 200.)
    const stored = new Set(
      await withClient(async (c) =>
        (await c.query<{ id: string }>(`SELECT id FROM "${schema}".deliveries`)).rows.map((r) => r.id),
      ),
    );
    expect(accepted.length).toBeGreaterThanOrEqual(5);
    expect(accepted.filter((id) => !stored.has(id))).toEqual([]);
  });
});
