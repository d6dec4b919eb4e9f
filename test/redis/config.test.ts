// STEWARD_REDIS_URL parsing (no Redis needed): accepted forms, one-line errors, and a
// password that is registered as a secret so no log or message can show it.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/env.js";
import { scrub } from "../../src/log/redact.js";
import { describeRedisUrl } from "../../src/store/redis/connect.js";
import { appKey } from "../support/app-key.js";

const base = { APP_ID: "4242", PRIVATE_KEY: appKey().privateKey, WEBHOOK_SECRET: "s3cret-hook" };

function problem(env: Record<string, string>): ConfigError {
  try {
    loadConfig({ ...base, ...env });
  } catch (e) {
    return e as ConfigError;
  }
  throw new Error("expected a configuration error");
}

describe("STEWARD_REDIS_URL", () => {
  it("is absent by default (the embedded SQLite store)", () => {
    expect(loadConfig(base).redisUrl).toBeUndefined();
  });

  it("accepts redis:// and rediss:// URLs with a database number", () => {
    expect(loadConfig({ ...base, STEWARD_REDIS_URL: "redis://127.0.0.1:6379/0" }).redisUrl).toBe(
      "redis://127.0.0.1:6379/0",
    );
    expect(loadConfig({ ...base, STEWARD_REDIS_URL: " rediss://cache.internal:6380 " }).redisUrl).toBe(
      "rediss://cache.internal:6380",
    );
  });

  it("rejects other schemes and non-numeric databases with one line naming the variable", () => {
    const scheme = problem({ STEWARD_REDIS_URL: "http://127.0.0.1:6379" });
    expect(scheme).toBeInstanceOf(ConfigError);
    expect(scheme.message).toBe('STEWARD_REDIS_URL must start with redis:// or rediss:// (got "http:")');
    expect(problem({ STEWARD_REDIS_URL: "redis://127.0.0.1:6379/queue" }).message).toMatch(
      /^STEWARD_REDIS_URL must name a database by number/,
    );
    expect(problem({ STEWARD_REDIS_URL: "127.0.0.1:6379" }).message).toMatch(/^STEWARD_REDIS_URL must/);
  });

  it("registers the password as a secret and never shows it", () => {
    const password = "p%40ss-redis-7d1c";
    const bad = problem({ STEWARD_REDIS_URL: `redis://:${password}@127.0.0.1:6379/queue` });
    expect(bad.message).not.toContain(password);
    expect(scrub(`connecting with ${password} and p@ss-redis-7d1c`)).not.toMatch(/ss-redis-7d1c/);
    expect(describeRedisUrl(`redis://user:${password}@127.0.0.1:6379/2`)).toBe("redis://127.0.0.1:6379/2");
    expect(describeRedisUrl("redis://127.0.0.1")).toBe("redis://127.0.0.1/0");
  });
});
