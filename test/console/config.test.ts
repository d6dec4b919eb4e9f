// The console's settings: the OAuth client comes as a pair, its secret and the session
// secret are secrets (masked like every other), and without them the console is off.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/env.js";
import { scrub } from "../../src/log/redact.js";
import { appKey } from "../support/app-key.js";

const base = { APP_ID: "123", PRIVATE_KEY: appKey().privateKey, WEBHOOK_SECRET: "whsec-value-1" };

describe("console settings", () => {
  it("takes GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET together, and masks the secrets", () => {
    expect(loadConfig(base).oauth).toBeUndefined();
    const config = loadConfig({
      ...base,
      GITHUB_CLIENT_ID: "Iv1.0123456789abcdef",
      GITHUB_CLIENT_SECRET: "oauth-client-secret-value",
      STEWARD_SESSION_SECRET: "s".repeat(40),
    });
    expect(config.oauth).toEqual({ clientId: "Iv1.0123456789abcdef", clientSecret: "oauth-client-secret-value" });
    expect(config.sessionSecret).toBe("s".repeat(40));
    expect(scrub("leaked oauth-client-secret-value here")).not.toContain("oauth-client-secret-value");
  });

  it("refuses half a client and a short session secret, naming the variable", () => {
    expect(() => loadConfig({ ...base, GITHUB_CLIENT_ID: "Iv1.0123456789abcdef" })).toThrow(/GITHUB_CLIENT_SECRET/);
    expect(() => loadConfig({ ...base, GITHUB_CLIENT_SECRET: "only-the-secret-value" })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, STEWARD_SESSION_SECRET: "short" })).toThrow(/STEWARD_SESSION_SECRET/);
  });
});
