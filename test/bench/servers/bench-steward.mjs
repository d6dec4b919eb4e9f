// What every benchmarked Steward shares, whether it runs compiled (steward-server.mjs, plain node
// over dist/) or from the sources (memory-server.ts, tsx): its settings and the counting no-op
// handler. Plain JavaScript so both can import it.

/** Steward settings the environment may not give a benchmarked Steward: its own data, a credential. */
const NOT_TAKEN = new Set(["STEWARD_DATA_DIR", "STEWARD_REVIEWER_TOKEN"]);

/** A STEWARD_* name that is Steward's setting, not the tests' own (STEWARD_TEST_REDIS_URL, ...). */
const isSetting = (name) => name.startsWith("STEWARD_") && !name.startsWith("STEWARD_TEST_") && !NOT_TAKEN.has(name);

/**
 * The STEWARD_* settings of `env` that a benchmarked Steward runs with, so that a setting tried
 * from the shell (`STEWARD_BUSY_WORKER_SHARE=2 npm run bench`) reaches the server measured. Until
 * stop 45 only STEWARD_DURABILITY did, and A/B runs of other settings compared a build with itself.
 */
export function settingsFromEnv(env = process.env) {
  return Object.fromEntries(
    Object.entries(env)
      .filter(([name, value]) => isSetting(name) && value !== undefined && value !== "")
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
}

/**
 * The environment `loadConfig` reads for a bench Steward: a throw-away app, loopback only,
 * durability `process` and no redelivery sweeps (nothing is missed in a bench, and a sweep would
 * bill its API calls to the run), unless the environment's STEWARD_* settings say otherwise.
 */
export function benchSettings({ privateKeyPem, dataDir, apiUrl, env = process.env }) {
  return {
    APP_ID: "1",
    ...(privateKeyPem === undefined ? {} : { PRIVATE_KEY: privateKeyPem }),
    WEBHOOK_SECRET: "bench-secret",
    PORT: "0",
    HOST: "127.0.0.1",
    GITHUB_API_URL: apiUrl ?? "http://127.0.0.1:9",
    STEWARD_DURABILITY: "process",
    STEWARD_REDELIVER_INTERVAL: "24h",
    LOG_LEVEL: "warn",
    ...settingsFromEnv(env),
    STEWARD_DATA_DIR: dataDir,
  };
}

/** A handler for every event that does nothing but count its runs. */
export function countingNoop() {
  let processed = 0;
  return {
    handler: {
      name: "noop",
      events: ["*"],
      async handle() {
        processed++;
        return { status: "done" };
      },
    },
    processed: () => processed,
  };
}
