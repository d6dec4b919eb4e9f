// What a running service loads: Probot (its index pulls in its HTTP server, express and their
// middleware, several MB of heap) only when it hosts a Probot app. The built-in handlers' API
// clients come from Steward's own Octokit (src/api/octokit.ts). Each store's client library and
// code only when that store is configured; libsodium only when a secret is sealed; the calendar
// libraries only when a calendar is read.
import { randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { deliveryId, postDelivery } from "./helpers.js";
import { realAppEnv, startChild } from "./child.js";
import { perTest } from "./per-test.js";
import { postgresUp, postgresUrl, withClient } from "../postgres/support.js";

const ping = JSON.stringify(
  (examples as { name: string; examples: unknown[] }[]).find((e) => e.name === "ping")!.examples[0],
);
const preload = resolve(import.meta.dirname, "fixtures/record-loads.mjs");
const probotApp = resolve(import.meta.dirname, "../dispatch/fixtures/router-probot-app.cjs");

const scope = perTest();

/** Runs `steward start` against the hub until a delivery was handled, and lists the packages it loaded. */
async function packagesLoaded(extra: Record<string, string>): Promise<Set<string>> {
  const hub = await scope.hub();
  const dir = await scope.dataDir("loads");
  const loads = join(dir, "loads.txt");
  await writeFile(loads, "");
  const secret = "loads-webhook-secret";
  const run = await scope.stopAfter(
    startChild({
      ...(await realAppEnv(hub, dir, secret)),
      NODE_OPTIONS: `--import ${preload}`,
      STEWARD_TEST_LOADS: loads,
      ...extra,
    }),
    (r) => r.proc.exitCode === null && r.proc.kill("SIGKILL"),
  );
  const url = await run.listening;
  expect((await postDelivery(url, { body: ping, secret, event: "ping", id: deliveryId() })).status).toBe(202);
  // The built-in secrets handler lists the app's installations on a ping: an API call made with the service's Octokit.
  await vi.waitFor(
    () =>
      expect(
        hub.control
          .requests()
          .filter((r) => r.path === "/app/installations")
          .map((r) => r.status),
      ).toContain(200),
    { timeout: 45_000, interval: 50 },
  );
  run.proc.kill("SIGTERM");
  expect(await run.exited).toBe(0);
  const packages = (await readFile(loads, "utf8"))
    .split("\n")
    .map((line) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(line)?.[1])
    .filter((p): p is string => p !== undefined);
  return new Set(packages);
}

describe("modules a running service loads", () => {
  it("with the built-in handlers: Octokit and its plugins, and neither Probot nor express", async () => {
    const loaded = await packagesLoaded({});
    // The recording sees both kinds of module: ES (Octokit) and CommonJS (better-sqlite3).
    expect(loaded).toContain("@octokit/core");
    expect(loaded).toContain("@octokit/plugin-throttling");
    expect(loaded).toContain("octokit-auth-probot");
    expect(loaded).toContain("better-sqlite3");
    expect([...loaded].filter((p) => ["probot", "express", "pino-http", "@probot/pino"].includes(p))).toEqual([]);
    // The other stores' clients, and libsodium before anything is sealed.
    expect([...loaded].filter((p) => ["pg", "ioredis", "libsodium-wrappers"].includes(p))).toEqual([]);
    // The calendar libraries of the deployments handler before a calendar, a zone or an instant is read.
    expect([...loaded].filter((p) => ["ical.js", "luxon"].includes(p))).toEqual([]);
  }, 90_000);

  it.skipIf(!postgresUp)(
    "on PostgreSQL: pg, and not ioredis",
    async () => {
      // A database of its own: the service keeps its tables in the default schema.
      const database = `steward_loads_${randomUUID().replace(/-/g, "")}`;
      await withClient((c) => c.query(`CREATE DATABASE ${database}`));
      try {
        const url = new URL(postgresUrl);
        url.pathname = `/${database}`;
        const loaded = await packagesLoaded({ STEWARD_POSTGRES_URL: url.href });
        expect(loaded).toContain("pg");
        expect(loaded).not.toContain("ioredis");
      } finally {
        await withClient((c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      }
    },
    90_000,
  );

  it("hosting a Probot app: Probot is loaded for it", async () => {
    const loaded = await packagesLoaded({ STEWARD_HANDLERS: probotApp });
    expect(loaded).toContain("probot");
    expect(loaded).toContain("express");
  }, 90_000);
});
