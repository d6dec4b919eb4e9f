import { describe, expect, it } from "vitest";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ConfigError, loadConfig } from "../../src/config/env.js";
import { scrub } from "../../src/log/redact.js";
import { appKey } from "../support/app-key.js";

const key = appKey().privateKey;
const base = { APP_ID: "123", PRIVATE_KEY: key, WEBHOOK_SECRET: "whsec-value-1" };

function problem(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("applies the documented defaults", () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({
      appId: 123,
      webhookSecrets: ["whsec-value-1"],
      webhookPath: "/api/github/webhooks",
      port: 3000,
      host: undefined,
      apiUrl: "https://api.github.com",
      logLevel: "info",
      logFormat: "json",
      dataDir: resolve("./.steward"),
      adminRepo: ".github",
      handlerPaths: [],
      concurrency: 8,
      maxAttempts: 5,
      shutdownTimeoutMs: 25_000,
      reviewerToken: undefined,
      syncIntervalMs: 6 * 3_600_000,
      redeliverIntervalMs: 600_000,
      statusUrl: undefined,
      durability: "process",
      octokitCheck: "on",
    });
    expect(config.privateKey).toContain("-----BEGIN RSA PRIVATE KEY-----");
  });

  it("reads every variable", () => {
    const config = loadConfig({
      ...base,
      WEBHOOK_SECRET: "old-secret, new-secret",
      WEBHOOK_PATH: "/hooks",
      PORT: "0",
      HOST: "127.0.0.1",
      GITHUB_API_URL: "https://ghe.example/api/v3/",
      LOG_LEVEL: "debug",
      LOG_FORMAT: "pretty",
      STEWARD_DATA_DIR: "/tmp/steward-x",
      STEWARD_ADMIN_REPO: "admin",
      STEWARD_HANDLERS: "./a.js, ./b.ts",
      STEWARD_CONCURRENCY: "3",
      STEWARD_MAX_ATTEMPTS: "7",
      STEWARD_SHUTDOWN_TIMEOUT: "10s",
      STEWARD_REVIEWER_TOKEN: "reviewer-token-value",
      STEWARD_SYNC_INTERVAL: "1h",
      STEWARD_REDELIVER_INTERVAL: "90",
      STEWARD_STATUS_URL: "https://status.example/steward",
      STEWARD_DURABILITY: "power",
      STEWARD_OCTOKIT_CHECK: "off",
    });
    expect(config).toMatchObject({
      webhookSecrets: ["old-secret", "new-secret"],
      webhookPath: "/hooks",
      port: 0,
      host: "127.0.0.1",
      apiUrl: "https://ghe.example/api/v3",
      logLevel: "debug",
      logFormat: "pretty",
      dataDir: "/tmp/steward-x",
      adminRepo: "admin",
      handlerPaths: ["./a.js", "./b.ts"],
      concurrency: 3,
      maxAttempts: 7,
      shutdownTimeoutMs: 10_000,
      reviewerToken: "reviewer-token-value",
      syncIntervalMs: 3_600_000,
      redeliverIntervalMs: 90_000,
      statusUrl: "https://status.example/steward",
      durability: "power",
      octokitCheck: "off",
    });
  });

  it("reads the operator's report-only switch: STEWARD_MODE for every handler, STEWARD_REPORT_ONLY for some", () => {
    expect(loadConfig(base).reportOnly).toBeUndefined();
    expect(loadConfig({ ...base, STEWARD_MODE: "act" }).reportOnly).toBeUndefined();
    expect(loadConfig({ ...base, STEWARD_MODE: "Report" }).reportOnly).toEqual(["*"]);
    expect(loadConfig({ ...base, STEWARD_REPORT_ONLY: " rerun, deployments ," }).reportOnly).toEqual([
      "rerun",
      "deployments",
    ]);
    // The wider switch wins: every handler reports.
    expect(loadConfig({ ...base, STEWARD_MODE: "report", STEWARD_REPORT_ONLY: "rerun" }).reportOnly).toEqual(["*"]);
  });

  it("builds the API URL from GHE_HOST and GHE_PROTOCOL", () => {
    expect(loadConfig({ ...base, GHE_HOST: "ghe.corp" }).apiUrl).toBe("https://ghe.corp/api/v3");
    expect(loadConfig({ ...base, GHE_HOST: "ghe.corp:8080", GHE_PROTOCOL: "http" }).apiUrl).toBe(
      "http://ghe.corp:8080/api/v3",
    );
    expect(loadConfig({ ...base, GHE_HOST: "ghe.corp", GITHUB_API_URL: "https://other/api/v3" }).apiUrl).toBe(
      "https://other/api/v3",
    );
  });

  it("accepts the private key with escaped newlines, as base64, and from a file", async () => {
    const escaped = key.trim().replace(/\n/g, "\\n");
    expect(escaped).not.toContain("\n");
    expect(loadConfig({ ...base, PRIVATE_KEY: escaped }).privateKey).toBe(key);
    expect(loadConfig({ ...base, PRIVATE_KEY: Buffer.from(key).toString("base64") }).privateKey).toBe(key);
    const dir = await mkdtemp(join(tmpdir(), "steward-config-"));
    const file = join(dir, "app.pem");
    await writeFile(file, key);
    expect(loadConfig({ ...base, PRIVATE_KEY: undefined, PRIVATE_KEY_PATH: file }).privateKey).toBe(key);
  });

  it("registers every secret for redaction at load", () => {
    loadConfig({ ...base, WEBHOOK_SECRET: "rotating-one,rotating-two", STEWARD_REVIEWER_TOKEN: "reviewer-xyz-123" });
    const line = scrub(`rotating-one rotating-two reviewer-xyz-123 ${key} ${JSON.stringify(key)}`);
    expect(line).not.toMatch(/rotating|reviewer-xyz|PRIVATE KEY|MII/);
  });

  const cases: [string, Record<string, string | undefined>][] = [
    ["APP_ID", { APP_ID: "abc" }],
    ["APP_ID", { APP_ID: "0" }],
    ["PRIVATE_KEY", { PRIVATE_KEY: undefined }],
    ["PRIVATE_KEY", { PRIVATE_KEY: "super-secret-not-a-key" }],
    ["PRIVATE_KEY_PATH", { PRIVATE_KEY: undefined, PRIVATE_KEY_PATH: "/nonexistent/app.pem" }],
    ["WEBHOOK_SECRET", { WEBHOOK_SECRET: undefined }],
    ["WEBHOOK_SECRET", { WEBHOOK_SECRET: "secret-a,,secret-b" }],
    ["WEBHOOK_PATH", { WEBHOOK_PATH: "hooks" }],
    ["PORT", { PORT: "70000" }],
    ["PORT", { PORT: "http" }],
    ["HOST", { HOST: "bad host" }],
    ["GITHUB_API_URL", { GITHUB_API_URL: "not a url" }],
    ["GITHUB_API_URL", { GITHUB_API_URL: "ftp://example.com" }],
    ["GHE_HOST", { GHE_HOST: "https://ghe.corp" }],
    ["GHE_PROTOCOL", { GHE_HOST: "ghe.corp", GHE_PROTOCOL: "gopher" }],
    ["LOG_LEVEL", { LOG_LEVEL: "loud" }],
    ["LOG_FORMAT", { LOG_FORMAT: "xml" }],
    ["STEWARD_ADMIN_REPO", { STEWARD_ADMIN_REPO: "a/b" }],
    ["STEWARD_CONCURRENCY", { STEWARD_CONCURRENCY: "0" }],
    ["STEWARD_MAX_ATTEMPTS", { STEWARD_MAX_ATTEMPTS: "-1" }],
    ["STEWARD_SHUTDOWN_TIMEOUT", { STEWARD_SHUTDOWN_TIMEOUT: "soon" }],
    ["STEWARD_REVIEWER_TOKEN", { STEWARD_REVIEWER_TOKEN: "two words" }],
    ["STEWARD_SYNC_INTERVAL", { STEWARD_SYNC_INTERVAL: "6 hours" }],
    ["STEWARD_REDELIVER_INTERVAL", { STEWARD_REDELIVER_INTERVAL: "x" }],
    ["STEWARD_STATUS_URL", { STEWARD_STATUS_URL: "status" }],
    ["STEWARD_DURABILITY", { STEWARD_DURABILITY: "disk" }],
    ["STEWARD_OCTOKIT_CHECK", { STEWARD_OCTOKIT_CHECK: "warn" }],
    ["STEWARD_MODE", { STEWARD_MODE: "dry-run" }],
    ["STEWARD_REPORT_ONLY", { STEWARD_REPORT_ONLY: "rerun deployments" }],
  ];
  it.each(cases)("names %s in one line when it is missing or malformed", (variable, env) => {
    const error = problem({ ...base, ...env });
    expect(error.variable).toBe(variable);
    expect(error.message.startsWith(`${variable} `)).toBe(true);
    expect(error.message).not.toContain("\n");
  });

  it("never echoes a secret value in its error", () => {
    expect(problem({ ...base, PRIVATE_KEY: "super-secret-not-a-key" }).message).not.toContain("super-secret");
    expect(problem({ ...base, STEWARD_REVIEWER_TOKEN: "tok en" }).message).not.toContain("tok en");
    expect(problem({ ...base, GITHUB_API_URL: "https://user:pass@ghe.corp" }).message).not.toContain("pass");
  });
});
