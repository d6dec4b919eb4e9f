// The `rerun` section: schema (closed keys) and semantic checks (globs, regexes, durations).
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { delayMs, rerunPolicy, type RerunPolicy } from "../../../handlers/rerun/policy.js";

const ajv = new Ajv({ allErrors: true, strict: false });
const validateSchema = ajv.compile(rerunPolicy.schema);

function problems(yamlText: string): {
  schema: string[];
  semantic: { path: string; message: string; severity: string }[];
} {
  const section = (parse(yamlText) as { rerun: unknown }).rerun;
  const schemaOk = validateSchema(section);
  const schema = schemaOk ? [] : (validateSchema.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  const semantic: { path: string; message: string; severity: string }[] = [];
  if (schemaOk) {
    const value = { ...rerunPolicy.defaults, ...(section as object) } as RerunPolicy;
    rerunPolicy.check!(value, (path, message, severity = "error") =>
      semantic.push({ path: path.join("."), message, severity }),
    );
  }
  return { schema, semantic };
}

describe("rerun policy section", () => {
  it("accepts the example from the issue", () => {
    const p = problems(`
rerun:
  enabled: true
  workflows: ["CI", ".github/workflows/e2e.yml"]
  branches: ["main", "release/*"]
  events: [push, pull_request]
  max_attempts: 3
  mode: failed_jobs
  max_failed_jobs: 5
  delay: 30s
  rules:
    - jobs: ["integration-*"]
      steps: ["Install*"]
      conclusions: [failure, timed_out]
      log: ["ECONNRESET", "/lost communication with the server/i"]
    - runner_lost: true
`);
    expect(p).toEqual({ schema: [], semantic: [] });
  });

  it("is disabled by default", () => {
    expect(rerunPolicy.defaults.enabled).toBe(false);
    expect(rerunPolicy.key).toBe("rerun");
  });

  it("leaves runs of fork pull requests alone unless rerun.forks opts in", () => {
    expect(rerunPolicy.defaults.forks).toBe(false);
    expect(problems("rerun:\n  enabled: true\n  forks: true\n")).toEqual({ schema: [], semantic: [] });
    expect(problems("rerun:\n  forks: yes please\n").schema.join()).toMatch(/\/forks must be boolean/);
  });

  it("rejects unknown keys at the top and in rules", () => {
    expect(problems("rerun:\n  max_atempts: 3\n").schema.join()).toMatch(/additional properties/);
    expect(problems("rerun:\n  rules:\n    - job: [x]\n").schema.join()).toMatch(
      /\/rules\/0 must NOT have additional properties/,
    );
  });

  it("rejects bad enums and ranges", () => {
    expect(problems("rerun:\n  mode: everything\n").schema.join()).toMatch(/\/mode/);
    expect(problems("rerun:\n  max_attempts: 0\n").schema.join()).toMatch(/\/max_attempts/);
    expect(problems("rerun:\n  max_attempts: 60\n").schema.join()).toMatch(/\/max_attempts/);
    expect(problems("rerun:\n  rules:\n    - conclusions: [success]\n").schema.join()).toMatch(/conclusions/);
  });

  it("reports bad globs, regexes and durations by path", () => {
    const p = problems(`
rerun:
  branches: ["release/[0-9"]
  delay: soon
  rules:
    - jobs: ["ok", "{a,b"]
      log: ["/(unclosed/"]
`);
    expect(p.schema).toEqual([]);
    expect(p.semantic.map((s) => s.path)).toEqual(["branches.0", "delay", "rules.0.jobs.1", "rules.0.log.0"]);
    expect(p.semantic.every((s) => s.severity === "error")).toBe(true);
    expect(p.semantic[3]!.message).toMatch(/invalid regular expression/);
  });

  it("warns about rules without conditions and empty scopes", () => {
    const p = problems("rerun:\n  workflows: []\n  rules:\n    - {}\n");
    expect(p.semantic.map((s) => [s.path, s.severity])).toEqual([
      ["workflows", "warning"],
      ["rules.0", "warning"],
    ]);
  });

  it("warns about event names that trigger no workflow", () => {
    const p = problems("rerun:\n  events: [push, pull-request]\n");
    expect(p.semantic).toEqual([
      {
        path: "events.1",
        severity: "warning",
        message: '"pull-request" is not an event that triggers workflow runs (did you mean "pull_request"?)',
      },
    ]);
  });

  it("parses delays", () => {
    expect(delayMs({ delay: "30s" })).toBe(30_000);
    expect(delayMs({ delay: "5m" })).toBe(300_000);
    expect(delayMs({ delay: 2 })).toBe(2000);
  });
});

describe("rerun section through the policy validator", () => {
  it("reports unknown keys and bad patterns at their file positions", async () => {
    const { validatePolicyText } = await import("../../../src/policy/validate.js");
    const { default: rerun } = await import("../../../handlers/rerun/index.js");
    const text = [
      "rerun:",
      "  enabled: true",
      "  max_atempts: 3",
      "  rules:",
      '    - jobs: ["integration-[a"]',
      '      log: ["/(oops/i"]',
      "",
    ].join("\n");
    const { problems } = validatePolicyText(text, { file: ".github/steward.yml", handlers: [rerun] });
    const errors = problems.filter((p) => p.severity === "error");
    expect(errors.find((p) => p.message.includes("max_atempts"))).toMatchObject({
      line: 3,
      suggestion: "max_attempts",
    });
    // Semantic checks run once the schema passes; fix the key and look again.
    const second = validatePolicyText(text.replace("max_atempts", "max_attempts"), {
      file: ".github/steward.yml",
      handlers: [rerun],
    });
    const byPath = second.problems.map((p) => [p.path.join("."), p.line]);
    expect(byPath).toEqual([
      ["rerun.rules.0.jobs.0", 5],
      ["rerun.rules.0.log.0", 6],
    ]);
  });
});
