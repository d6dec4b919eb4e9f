// Steward as `steward start` runs it (`npm start`: its build, dist/, under plain Node), in a process
// of its own. The store is the environment's choice, as in production: SQLite in a scratch data
// directory, or STEWARD_REDIS_URL (keys under BENCH_PREFIX), or STEWARD_POSTGRES_URL; BENCH_DATA_DIR:
// a data directory the bench made (and seeded) rather than a scratch one. For the intake, every
// delivery goes to a handler that does nothing, the same work as the peers' workers; with BENCH_HUB
// (a sandbox hub's environment) the built-in handlers run against that hub, as in the sandbox stack.
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveUnderTest } from "./serve.mjs";

// BENCH_FROM_SOURCE=1 (the bench's smoke test, which measures nothing): the sources, through the
// loader child.ts then gives this process, so that a test never builds the checkout's dist/.
const code = process.env.BENCH_FROM_SOURCE === "1" ? "../../../src/" : "../../../dist/src/";
const { createSteward } = await import(`${code}app.js`);
const { loadConfig } = await import(`${code}config/env.js`);

const ownDataDir = process.env.BENCH_DATA_DIR === undefined;
const dataDir = process.env.BENCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), "steward-bench-"));
/** @type {{ env: Record<string, unknown>; reviewerToken: string } | undefined} */
const hub = process.env.BENCH_HUB ? JSON.parse(process.env.BENCH_HUB) : undefined;
const prefix = process.env.BENCH_PREFIX;
const noop = { name: "noop", events: ["*"], handle: async () => ({ status: "done" }) };

const redis = prefix ? { redis: { prefix: `{${prefix}}:` } } : {};
// The sandbox stack (and the hub's modules behind it) only when a hub is named, as `steward start`
// loads it only for the sandbox: the intake's Steward holds what production holds.
const sandbox = hub ? await import(`${code}sandbox/stack.js`) : undefined;
const steward =
  hub && sandbox
    ? await createSteward({
        config: loadConfig({ ...process.env, ...sandbox.sandboxStewardEnv(hub.env, hub.reviewerToken, { dataDir }) }),
        ...sandbox.sandboxApiOptions(),
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
