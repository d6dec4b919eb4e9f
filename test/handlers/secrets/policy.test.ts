import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check, nameError, sourceError, type SecretsPolicy } from "../../../handlers/secrets/policy.js";

function problems(policy: Partial<SecretsPolicy>) {
  const out: { path: (string | number)[]; message: string; severity: string }[] = [];
  check({ secrets: {}, variables: {}, prune: false, ...policy }, (path, message, severity = "error") => out.push({ path, message, severity }));
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

  it("sources: env and file must exist; literals and unknown schemes are refused without echoing them", async () => {
    const dir = await mkdtemp(join(tmpdir(), "steward-secrets-"));
    const file = join(dir, "key");
    await writeFile(file, "value");
    expect(sourceError("env:PRESENT", { PRESENT: "x" })).toBeUndefined();
    expect(sourceError("env:ABSENT", {})).toMatch(/ABSENT is not set/);
    expect(sourceError(`file:${file}`)).toBeUndefined();
    expect(sourceError(`file:${dir}/nope`)).toMatch(/does not exist/);
    expect(sourceError(`file:${dir}`)).toMatch(/not a file/);
    const literal = sourceError("hunter2-very-secret");
    expect(literal).toMatch(/literal/);
    expect(literal).not.toContain("hunter2");
    const scheme = sourceError("vault:kv/secret-path-xyz");
    expect(scheme).toMatch(/unknown source/);
    expect(scheme).not.toContain("secret-path-xyz");
  });

  it("sources of untrusted text (resolve: false) are checked for form only, never looked up", async () => {
    const dir = await mkdtemp(join(tmpdir(), "steward-secrets-"));
    const file = join(dir, "key");
    await writeFile(file, "value");
    const untrusted = (from: string, env: NodeJS.ProcessEnv) => sourceError(from, env, { resolve: false });
    // Present or absent, file or directory: the same answer, so it tells nothing about the host.
    for (const from of ["env:PRESENT", "env:ABSENT", `file:${file}`, `file:${dir}/nope`, `file:${dir}`]) expect(untrusted(from, { PRESENT: "x" })).toBeUndefined();
    expect(untrusted("hunter2-very-secret", {})).toMatch(/literal/);
    expect(untrusted("vault:kv/secret-path-xyz", {})).toMatch(/unknown source/);
    expect(untrusted("env:1BAD", {})).toMatch(/must be env:NAME or file:\/path/);
    expect(untrusted("file:relative/path", {})).toMatch(/must be env:NAME or file:\/path/);
  });

  it("the check validates structure only when told the text is untrusted", () => {
    const policy: SecretsPolicy = {
      secrets: {
        ABSENT: { from: "env:STEWARD_TEST_SURELY_NOT_SET_1234", repositories: ["a"] },
        MISSING: { from: "file:/surely/not/here/steward-1234", repositories: ["a"] },
        LITERAL: { value: "s3cr3t", repositories: ["a"] },
        "1BAD": { from: "env:X", repositories: ["[x"] },
      },
      variables: {},
      prune: false,
    };
    const run = (options?: { resolveSources: boolean }) => {
      const out: string[] = [];
      check(policy, (path, message) => out.push(`${path.join(".")}: ${message}`), options);
      return out;
    };
    const structural = [
      'secrets.1BAD: name "1BAD" must not start with a digit',
      "secrets.LITERAL.value: secret LITERAL has a literal value: secrets must come from env:NAME or file:/path",
      'secrets.1BAD.repositories.0: unclosed "[" in glob "[x"',
    ];
    expect(run({ resolveSources: false }).sort()).toEqual([...structural].sort());
    // Trusted (the default, as `steward validate` and same-repository pull requests): sources are looked up.
    expect(run().sort()).toEqual(
      [
        ...structural,
        "secrets.ABSENT.from: environment variable STEWARD_TEST_SURELY_NOT_SET_1234 is not set",
        "secrets.MISSING.from: file /surely/not/here/steward-1234 does not exist",
        "secrets.1BAD.from: environment variable X is not set",
      ].sort(),
    );
    expect(run({ resolveSources: true })).toEqual(run());
  });

  it("reports literal values, missing from, bad names, visibility misuse and bad globs by path", () => {
    process.env.STEWARD_TEST_SECRET_OK = "1";
    const found = problems({
      secrets: {
        LITERAL: { value: "s3cr3t", repositories: ["a"] },
        NOFROM: { repositories: ["a"] },
        "GITHUB_X": { from: "env:STEWARD_TEST_SECRET_OK", repositories: ["a"] },
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
        secrets: { NPM_TOKEN: { from: "env:STEWARD_TEST_SECRET_OK", org: { visibility: "selected", repositories: ["web-*", "api"] }, environments: { production: ["service-*"] } } },
        variables: { REGION: { value: "eu-west-1", org: { visibility: "all" } } },
        prune: true,
      }),
    ).toEqual([]);
  });
});
