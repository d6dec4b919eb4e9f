import { describe, expect, it } from "vitest";
import { resolveDesired } from "../../../handlers/secrets/resolve.js";
import type { SecretsPolicy } from "../../../handlers/secrets/policy.js";

const repos = [
  { id: 3, name: "web-app" },
  { id: 1, name: "api" },
  { id: 2, name: "web-site" },
  { id: 4, name: "service-a" },
  { id: 5, name: "service-old", archived: true },
  { id: 6, name: "Service-B" },
];

describe("resolveDesired", () => {
  const policy: SecretsPolicy = {
    prune: true,
    secrets: {
      npm_token: { from: "env:NPM", org: { visibility: "selected", repositories: ["web-*", "API"] } },
      DEPLOY_KEY: { from: "file:/k", repositories: ["service-*"], environments: { production: ["service-a"] } },
    },
    variables: { REGION: { value: "eu", org: { visibility: "all" } }, TIER: { value: 3, repositories: ["api"] } },
  };
  const desired = resolveDesired(policy, repos);

  it("puts each entry at each matching scope, names uppercased", () => {
    expect(desired.map((d) => d.key)).toEqual([
      "secret/env/service-a/production/DEPLOY_KEY",
      "secret/org/NPM_TOKEN",
      "secret/repo/service-a/DEPLOY_KEY",
      "secret/repo/service-b/DEPLOY_KEY",
      "variable/org/REGION",
      "variable/repo/api/TIER",
    ]);
  });

  it("selects org repositories by name and glob, case-insensitively, as sorted ids", () => {
    const org = desired.find((d) => d.key === "secret/org/NPM_TOKEN")!;
    expect(org.visibility).toBe("selected");
    expect(org.selectedRepositoryIds).toEqual([1, 2, 3]);
    expect(org.from).toBe("env:NPM");
  });

  it("stringifies variable values and skips archived repositories", () => {
    expect(desired.find((d) => d.key === "variable/repo/api/TIER")!.value).toBe("3");
    expect(desired.some((d) => d.key.includes("service-old"))).toBe(false);
  });
});
