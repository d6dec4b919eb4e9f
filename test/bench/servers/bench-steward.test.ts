import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/env.js";
import { appKey } from "../../support/app-key.js";
import { benchSettings, settingsFromEnv } from "./bench-steward.mjs";

const privateKeyPem = appKey().privateKey;

describe("the benchmarked Steward's settings", () => {
  it("runs with the bench's own when the environment gives none", () => {
    const config = loadConfig(benchSettings({ privateKeyPem, dataDir: "/tmp/steward-bench-x", env: {} }));
    expect(config).toMatchObject({ durability: "process", redeliverIntervalMs: 24 * 3_600_000, busyWorkerShare: 1, concurrency: 8, dataDir: "/tmp/steward-bench-x" });
  });

  // An A/B of a setting from the shell once compared a build with itself: only STEWARD_DURABILITY reached the server.
  it("takes the environment's STEWARD_* settings, over the bench's own", () => {
    const env = { STEWARD_BUSY_WORKER_SHARE: "2", STEWARD_CONCURRENCY: "3", STEWARD_REDELIVER_INTERVAL: "1h", STEWARD_DURABILITY: "power", PATH: "/usr/bin" };
    const config = loadConfig(benchSettings({ privateKeyPem, dataDir: "/tmp/steward-bench-x", env }));
    expect(config).toMatchObject({ busyWorkerShare: 2, concurrency: 3, redeliverIntervalMs: 3_600_000, durability: "power" });
  });

  it("never takes the data directory, a credential or the tests' own variables from the environment", () => {
    const env = { STEWARD_DATA_DIR: "/var/lib/steward", STEWARD_REVIEWER_TOKEN: "ghp_not-for-the-bench", STEWARD_TEST_REDIS_URL: "redis://127.0.0.1:6379/9", STEWARD_MAX_ATTEMPTS: "2" };
    expect(settingsFromEnv(env)).toEqual({ STEWARD_MAX_ATTEMPTS: "2" });
    const config = loadConfig(benchSettings({ privateKeyPem, dataDir: "/tmp/steward-bench-x", env }));
    expect(config).toMatchObject({ dataDir: "/tmp/steward-bench-x", reviewerToken: undefined, maxAttempts: 2 });
  });
});
