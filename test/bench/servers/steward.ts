// Steward as `steward start` runs it, in a process of its own. The store is the environment's
// choice, as in production: SQLite in a scratch data directory, or STEWARD_REDIS_URL (keys under
// BENCH_PREFIX), or STEWARD_POSTGRES_URL; BENCH_DATA_DIR: a data directory the bench made (and
// seeded) rather than a scratch one. For the intake, every delivery goes to a handler that does nothing, the same
// work as the peers' workers; with BENCH_HUB (a sandbox hub's environment) the built-in handlers
// run against that hub, as in the sandbox stack.
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSteward } from "../../../src/app.js";
import { loadConfig } from "../../../src/config/env.js";
import type { HubEnv } from "../../../src/sandbox/hub.js";
import { serveUnderTest } from "./child.js";

const ownDataDir = process.env.BENCH_DATA_DIR === undefined;
const dataDir = process.env.BENCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), "steward-bench-"));
const hub = process.env.BENCH_HUB
  ? (JSON.parse(process.env.BENCH_HUB) as { env: HubEnv; reviewerToken: string })
  : undefined;
const prefix = process.env.BENCH_PREFIX;
const noop = { name: "noop", events: ["*" as const], handle: async () => ({ status: "done" as const }) };

const redis = prefix ? { redis: { prefix: `{${prefix}}:` } } : {};
// The sandbox stack (and the hub's modules behind it) only when a hub is named, as `steward start`
// loads it only for the sandbox: the intake's Steward holds what production holds.
const sandbox = hub ? await import("../../../src/sandbox/stack.js") : undefined;
const steward = hub
  ? await createSteward({
      config: loadConfig({ ...process.env, ...sandbox!.sandboxStewardEnv(hub.env, hub.reviewerToken, { dataDir }) }),
      ...sandbox!.sandboxApiOptions(),
      ...redis,
    })
  : await createSteward({
      config: loadConfig({
        ...process.env,
        APP_ID: "1",
        PRIVATE_KEY: generateKeyPairSync("rsa", { modulusLength: 2048 })
          .privateKey.export({ type: "pkcs1", format: "pem" })
          .toString(),
        PORT: "0",
        HOST: "127.0.0.1",
        // No API behind it: the handler makes no calls, and the start-up checks may fail quietly.
        GITHUB_API_URL: "http://127.0.0.1:9",
        STEWARD_DATA_DIR: dataDir,
        LOG_LEVEL: "fatal",
      }),
      handlers: [noop],
      ...redis,
    });

serveUnderTest(
  `${steward.url.replace(/\/$/, "")}/api/github/webhooks`,
  () => steward.engine.idle(),
  async () => {
    await steward.close();
    if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
  },
);
