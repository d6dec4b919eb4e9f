// STEWARD_POSTGRES_URL parsing (no PostgreSQL needed): accepted forms, one-line errors, TLS
// parameters as libpq names them, and a password that is registered as a secret so no log or
// message can show it.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, loadStoreSettings } from "../../src/config/env.js";
import { scrub } from "../../src/log/redact.js";
import { describePostgresUrl, libpqUrl } from "../../src/store/postgres/connect.js";
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

describe("STEWARD_POSTGRES_URL", () => {
  it("is absent by default", () => {
    expect(loadConfig(base).postgresUrl).toBeUndefined();
  });

  it("accepts postgres:// and postgresql:// URLs, beside a Redis URL, and operator commands see it", () => {
    const url = "postgres://steward@db.internal:5432/steward?sslmode=verify-full";
    expect(loadConfig({ ...base, STEWARD_POSTGRES_URL: url }).postgresUrl).toBe(url);
    const both = loadConfig({
      ...base,
      STEWARD_POSTGRES_URL: " postgresql://db/steward ",
      STEWARD_REDIS_URL: "redis://cache:6379/0",
    });
    expect([both.postgresUrl, both.redisUrl]).toEqual(["postgresql://db/steward", "redis://cache:6379/0"]);
    expect(loadStoreSettings({ STEWARD_POSTGRES_URL: url }).postgresUrl).toBe(url);
  });

  it("rejects other schemes, unknown sslmodes and missing certificate files with one line naming the variable", () => {
    expect(problem({ STEWARD_POSTGRES_URL: "mysql://db/steward" }).message).toBe(
      'STEWARD_POSTGRES_URL must start with postgres:// or postgresql:// (got "mysql:")',
    );
    expect(problem({ STEWARD_POSTGRES_URL: "db.internal:5432" }).message).toMatch(/^STEWARD_POSTGRES_URL must/);
    expect(problem({ STEWARD_POSTGRES_URL: "postgres://db/steward?sslmode=always" }).message).toBe(
      'STEWARD_POSTGRES_URL sslmode must be one of disable, prefer, require, verify-ca, verify-full (got "always")',
    );
    expect(
      problem({ STEWARD_POSTGRES_URL: "postgres://db/steward?sslmode=verify-full&sslrootcert=/no/such/ca.pem" })
        .message,
    ).toBe('STEWARD_POSTGRES_URL sslrootcert names a file that does not exist ("/no/such/ca.pem")');
    expect(problem({ STEWARD_POSTGRES_URL: "postgres://db/steward?sslmode=verify-ca" }).message).toMatch(
      /verify-ca needs sslrootcert/,
    );
  });

  it("registers the password as a secret and never shows it", () => {
    const password = "p%40ss-pg-5e2a";
    const bad = problem({ STEWARD_POSTGRES_URL: `postgres://steward:${password}@db/steward?sslmode=nope` });
    expect(bad.message).not.toContain(password);
    expect(scrub(`connecting with ${password} and p@ss-pg-5e2a`)).not.toMatch(/ss-pg-5e2a/);
    problem({ STEWARD_POSTGRES_URL: "postgres://db/steward?password=qs-secret-91b7&sslmode=nope" });
    expect(scrub("qs-secret-91b7")).not.toContain("qs-secret-91b7");
    expect(describePostgresUrl(`postgresql://steward:${password}@db.internal:6432/steward?sslmode=require`)).toBe(
      "postgres://db.internal:6432/steward",
    );
    expect(problem({ STEWARD_POSTGRES_URL: `postgres://u:${password}@/` }).message).not.toContain(password);
  });

  it("keeps libpq's meaning of sslmode (require encrypts without verifying) unless the URL chose", () => {
    expect(new URL(libpqUrl("postgres://db/s?sslmode=require")).searchParams.get("uselibpqcompat")).toBe("true");
    expect(
      new URL(libpqUrl("postgres://db/s?sslmode=require&uselibpqcompat=false")).searchParams.get("uselibpqcompat"),
    ).toBe("false");
    expect(new URL(libpqUrl("postgres://db/s")).searchParams.has("uselibpqcompat")).toBe(false);
  });
});
