// The example policy through the same validator `steward validate` and the
// `steward/config` check use, with every built-in handler loaded.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { builtinHandlers } from "../../../handlers/index.js";
import { parseSecretsDocument } from "../../../handlers/secrets/document.js";
import { validatePolicyText } from "../../../src/policy/validate.js";

const DOC = ".github/steward/secrets.yml";

async function example(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-secrets-doc-"));
  await writeFile(join(dir, "deploy_key"), "k");
  process.env.STEWARD_SECRET_NPM_TOKEN = "x";
  return `secrets:
  NPM_TOKEN:
    from: env:STEWARD_SECRET_NPM_TOKEN      # env:NAME | file:/path, resolved by the service; never a literal
    org:                                    # an organisation secret
      visibility: selected                  # all | private | selected
      repositories: ["web-*", api]          # names or globs; only with selected
  DEPLOY_KEY:
    from: file:${dir}/deploy_key
    repositories: ["service-*"]             # repository secrets in each matching repository
    environments:                           # environment secrets: environment -> repositories
      production: ["service-*"]
variables:
  REGION:
    value: eu-west-1                        # variables may be literal
    org: { visibility: all }
  TIER:
    value: gold
    repositories: [api]
prune: true                                 # delete what Steward created and the policy no longer lists
`;
}

describe("the secrets document through the shared validator", () => {
  it("accepts the issue's example", async () => {
    const text = await example();
    expect(validatePolicyText(text, { file: DOC, handlers: builtinHandlers, document: DOC }).problems).toEqual([]);
    const { policy } = parseSecretsDocument(text, DOC);
    expect(policy?.prune).toBe(true);
    expect(Object.keys(policy?.secrets ?? {})).toEqual(["NPM_TOKEN", "DEPLOY_KEY"]);
  });

  it("reports each mistake at its line, with the value never echoed", async () => {
    const text = (await example())
      .replace("from: env:STEWARD_SECRET_NPM_TOKEN ", "value: s3cr3t-literal-value")
      .replace("visibility: all }", "visibility: all, repositories: [api] }")
      .replace("  TIER:", "  GITHUB_TIER:")
      .replace("prune: true", "prune: true\nsecretz: {}");
    const { problems } = validatePolicyText(text, { file: DOC, handlers: builtinHandlers, document: DOC });
    const lines = problems.map((p) => `${p.line} ${p.message}`);
    expect(lines.join("\n")).not.toContain("s3cr3t-literal-value");
    expect(problems.length).toBeGreaterThan(0);
    // Schema errors (an unknown key) come first; the semantic checks run once the schema passes.
    expect(lines.some((l) => /^20 .*secretz/.test(l))).toBe(true);
    const fixed = text.replace("\nsecretz: {}", "");
    const semantic = validatePolicyText(fixed, { file: DOC, handlers: builtinHandlers, document: DOC }).problems.map(
      (p) => `${p.line} ${p.message}`,
    );
    expect(semantic).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^3 secret NPM_TOKEN has a literal value/),
        expect.stringMatching(/^15 "repositories" is allowed only with visibility "selected"/),
        expect.stringMatching(/^1[67] name "GITHUB_TIER" must not start with GITHUB_/),
      ]),
    );
    expect(semantic.join("\n")).not.toContain("s3cr3t-literal-value");
  });

  it("validation checks structure and source names without the values, whoever wrote the text", async () => {
    const text = (await example())
      .replace("STEWARD_SECRET_NPM_TOKEN ", "STEWARD_SECRET_SURELY_UNSET_9876 ")
      .replace(/from: file:\S+/, "from: file:/surely/not/here/deploy_key")
      .replace("  TIER:", "  GITHUB_TIER:");
    const trusted = parseSecretsDocument(text, DOC);
    const untrusted = parseSecretsDocument(text, DOC, { resolveSources: false });
    expect(untrusted.problems.map((p) => p.message)).toEqual(['name "GITHUB_TIER" must not start with GITHUB_']);
    expect(trusted).toEqual(untrusted);
    // With the variable set, the answer is byte for byte the same.
    process.env.STEWARD_SECRET_SURELY_UNSET_9876 = "now-set-value";
    try {
      expect(parseSecretsDocument(text, DOC)).toEqual(untrusted);
    } finally {
      delete process.env.STEWARD_SECRET_SURELY_UNSET_9876;
    }
    // Steward's own settings are refused whatever the host or the operator's exposure.
    const own = parseSecretsDocument(text.replace("STEWARD_SECRET_SURELY_UNSET_9876 ", "WEBHOOK_SECRET "), DOC, {
      resolveSources: false,
    });
    expect(own.problems.map((p) => p.message)).toContain(
      "source env:WEBHOOK_SECRET is one of Steward's own settings, which are never available to a policy",
    );
  });

  it("refuses the document anywhere but as the admin document", () => {
    const { problems } = validatePolicyText("secrets: {}\n", {
      file: ".github/steward.yml",
      handlers: builtinHandlers,
    });
    expect(problems.map((p) => p.message).join("\n")).toMatch(/unknown section "secrets"/);
  });
});
