import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check, nameError, sourceError, type SecretsPolicy } from "../../../handlers/secrets/policy.js";

function problems(policy: Partial<SecretsPolicy>) {
  const out: { path: (string | number)[]; message: string; severity: string }[] = [];
  check({ secrets: {}, variables: {}, prune: false, ...policy }, (path, message, severity = "error") =>
    out.push({ path, message, severity }),
  );
  return out;
}

describe("secrets policy checks", () => {
  it.each([
    ["NPM_TOKEN", undefined],
    ["npm_token", undefined],
    ["_X", undefined],
    ["1TOKEN", /digit/],
    ["GITHUB_TOKEN", /GITHUB_/],
    ["github_x", /GITHUB_/],
    ["MY-TOKEN", /letters, digits/],
    ["A B", /letters, digits/],
  ])("name %s", (name, want) => {
    const err = nameError(name);
    if (want) expect(err).toMatch(want);
    else expect(err).toBeUndefined();
  });

  it("sources: only the form and Steward's own settings are judged without --resolve; literals are refused without echoing them", () => {
    for (const from of ["env:PRESENT", "env:ABSENT", "file:/etc/passwd", "file:/surely/not/here"])
      expect(sourceError(from)).toBeUndefined();
    expect(sourceError("env:WEBHOOK_SECRET")).toMatch(/one of Steward's own settings/);
    expect(sourceError("env:STEWARD_REVIEWER_TOKEN")).toMatch(/one of Steward's own settings/);
    const literal = sourceError("hunter2-very-secret");
    expect(literal).toMatch(/literal/);
    expect(literal).not.toContain("hunter2");
    const scheme = sourceError("vault:kv/secret-path-xyz");
    expect(scheme).toMatch(/unknown source/);
    expect(scheme).not.toContain("secret-path-xyz");
    expect(sourceError("env:1BAD")).toMatch(/must be env:NAME or file:\/path/);
    expect(sourceError("file:relative/path")).toMatch(/must be env:NAME or file:\/path/);
  });

  it("with --resolve, an exposed source resolves and every other one gets the same answer", async () => {
    const dir = await mkdtemp(join(tmpdir(), "steward-secrets-"));
    await writeFile(join(dir, "key"), "value");
    const env = { STEWARD_SECRET_SOURCES: `acme=env:ACME_,file:${dir}`, ACME_TOKEN: "x", OTHER: "y" };
    const resolve = (from: string) => sourceError(from, { resolve: { org: "acme", env } });
    expect(resolve("env:ACME_TOKEN")).toBeUndefined();
    expect(resolve(`file:${dir}/key`)).toBeUndefined();
    const answers = ["env:ACME_ABSENT", "env:OTHER", `file:${dir}/nope`, `file:${dir}`, "file:/etc/passwd"].map(
      (from) => resolve(from)!.replace(from, "FROM"),
    );
    expect(new Set(answers)).toEqual(
      new Set([
        "source FROM is not available (it is not set, or not exposed to this organisation by STEWARD_SECRET_SOURCES)",
      ]),
    );
  });

  it("the check never looks at the host unless asked to resolve for one organisation", () => {
    const policy: SecretsPolicy = {
      secrets: {
        ABSENT: { from: "env:STEWARD_TEST_SURELY_NOT_SET_1234", repositories: ["a"] },
        MISSING: { from: "file:/surely/not/here/steward-1234", repositories: ["a"] },
        LITERAL: { value: "s3cr3t", repositories: ["a"] },
        OWN: { from: "env:PRIVATE_KEY", repositories: ["a"] },
        "1BAD": { from: "env:X", repositories: ["[x"] },
      },
      variables: {},
      prune: false,
    };
    const run = (options?: { resolveSources: boolean; account?: string }) => {
      const out: string[] = [];
      check(policy, (path, message) => out.push(`${path.join(".")}: ${message}`), options);
      return out;
    };
    const structural = [
      'secrets.1BAD: name "1BAD" must not start with a digit',
      "secrets.LITERAL.value: secret LITERAL has a literal value: secrets must come from env:NAME or file:/path",
      "secrets.OWN.from: source env:PRIVATE_KEY is one of Steward's own settings, which are never available to a policy",
      'secrets.1BAD.repositories.0: unclosed "[" in glob "[x"',
    ];
    expect(run({ resolveSources: false }).sort()).toEqual([...structural].sort());
    expect(run().sort()).toEqual([...structural].sort());
    expect(run({ resolveSources: true }).sort()).toEqual([...structural].sort());
    // `steward validate --resolve --account acme`: nothing is exposed to acme here, so every source is "not available".
    expect(run({ resolveSources: true, account: "acme" }).filter((l) => l.includes("not available"))).toHaveLength(3);
  });

  it("reports literal values, missing from, bad names, visibility misuse and bad globs by path", () => {
    process.env.STEWARD_TEST_SECRET_OK = "1";
    const found = problems({
      secrets: {
        LITERAL: { value: "s3cr3t", repositories: ["a"] },
        NOFROM: { repositories: ["a"] },
        GITHUB_X: { from: "env:STEWARD_TEST_SECRET_OK", repositories: ["a"] },
        VIS: { from: "env:STEWARD_TEST_SECRET_OK", org: { visibility: "all", repositories: ["a"] } },
        GLOB: { from: "env:STEWARD_TEST_SECRET_OK", repositories: ["web-[a"] },
        NOWHERE: { from: "env:STEWARD_TEST_SECRET_OK" },
      },
      variables: { dup: { value: "x", repositories: ["a"] }, DUP: { value: "y", repositories: ["a"] } },
    });
    const at = (p: string) => found.filter((f) => f.path.join(".").startsWith(p));
    expect(at("secrets.LITERAL.value")[0]!.message).toMatch(/literal value/);
    expect(found.map((f) => f.message).join("\n")).not.toContain("s3cr3t");
    expect(at("secrets.NOFROM")[0]!.message).toMatch(/needs "from/);
    expect(at("secrets.GITHUB_X")[0]!.message).toMatch(/GITHUB_/);
    expect(at("secrets.VIS.org.repositories")[0]!.message).toMatch(/only with visibility "selected"/);
    expect(at("secrets.GLOB.repositories.0")[0]!.message).toMatch(/unclosed/);
    expect(at("secrets.NOWHERE")[0]).toMatchObject({ severity: "warning" });
    expect(at("variables.DUP")[0]!.message).toMatch(/same name/);
    expect(found.filter((f) => f.severity === "error")).toHaveLength(6);
  });

  it("a clean policy has no problems", () => {
    process.env.STEWARD_TEST_SECRET_OK = "1";
    expect(
      problems({
        secrets: {
          NPM_TOKEN: {
            from: "env:STEWARD_TEST_SECRET_OK",
            org: { visibility: "selected", repositories: ["web-*", "api"] },
            environments: { production: ["service-*"] },
          },
        },
        variables: { REGION: { value: "eu-west-1", org: { visibility: "all" } } },
        prune: true,
      }),
    ).toEqual([]);
  });
});
