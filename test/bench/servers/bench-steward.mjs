// What every benchmarked Steward shares, whether it runs compiled (steward-server.mjs, plain node
// over dist/) or from the sources (memory-server.ts, tsx): its settings and the counting no-op
// handler. Plain JavaScript so both can import it.

/**
 * The environment `loadConfig` reads for a bench Steward: a throw-away app, loopback only,
 * durability `process` unless STEWARD_DURABILITY says otherwise, and no redelivery sweeps
 * (nothing is missed in a bench, and a sweep would bill its API calls to the run).
 */
export function benchSettings({ privateKeyPem, dataDir, apiUrl, env = process.env }) {
  return {
    APP_ID: "1",
    ...(privateKeyPem === undefined ? {} : { PRIVATE_KEY: privateKeyPem }),
    WEBHOOK_SECRET: "bench-secret",
    PORT: "0",
    HOST: "127.0.0.1",
    GITHUB_API_URL: apiUrl ?? "http://127.0.0.1:9",
    STEWARD_DATA_DIR: dataDir,
    STEWARD_DURABILITY: env.STEWARD_DURABILITY ?? "process",
    STEWARD_REDELIVER_INTERVAL: "24h",
    LOG_LEVEL: "warn",
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
