import { describe, expect, it } from "vitest";
import { resolvePolicy } from "../../src/policy/resolve.js";
import { validatePolicyText } from "../../src/policy/validate.js";
import { testHandlers } from "./fixtures.js";

const file = ".github/steward.yml";
const validate = (text: string, document?: string) =>
  validatePolicyText(text, { file, handlers: testHandlers, ...(document ? { document } : {}) });
const brief = (text: string, document?: string) =>
  validate(text, document).problems.map((p) => `${p.line}:${p.column} ${p.message}`);

describe("validatePolicyText", () => {
  it("accepts a valid file and returns its value", () => {
    const r = validate("rerun:\n  max_attempts: 3\n  branches: [main, 'release/*']\nchecks:\n  config: false\n");
    expect(r.problems).toEqual([]);
    expect(r.value).toEqual({ rerun: { max_attempts: 3, branches: ["main", "release/*"] }, checks: { config: false } });
  });

  it("refuses more aliases than a policy needs at the first one over, before the document is built", () => {
    // Each alias looks its anchor up through what came before it: 3,000 of them held the event loop 3 s.
    const lines = (n: number) =>
      ["rerun:", "  branches: &b [main]", ...Array.from({ length: n }, (_, i) => `  x${i}: *b`)].join("\n") + "\n";
    expect(brief(lines(3_000))).toEqual([
      "103:9 the document uses more than 100 aliases (*name); write the values out or use fewer",
    ]);
    // Within the bound the document is read as before: its problems are the unknown keys.
    const within = validate(lines(100));
    expect(within.problems.some((p) => p.message.includes("aliases"))).toBe(false);
    expect(within.problems.map((p) => p.message)).toContain('unknown key "x0" in "rerun"');
  });

  it("accepts an empty file and a file of comments", () => {
    expect(validate("").problems).toEqual([]);
    expect(validate("# nothing yet\n").problems).toEqual([]);
  });

  it("points an unknown key at the key itself with a did-you-mean", () => {
    const r = validate("rerun:\n  enabled: true\n  max_atempts: 3\n");
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatchObject({
      file,
      line: 3,
      column: 3,
      severity: "error",
      suggestion: "max_attempts",
      path: ["rerun", "max_atempts"],
    });
    expect(r.problems[0]!.message).toContain('unknown key "max_atempts"');
    expect(r.problems[0]!.message).toContain('(did you mean "max_attempts"?)');
  });

  it("reports unknown sections with a suggestion and no suggestion for unrelated names", () => {
    expect(brief("rerum:\n  enabled: true\nzzzzzzzzzzzz: 1\n")).toEqual([
      '1:1 unknown section "rerum" (did you mean "rerun"?); known sections: rerun, checks',
      '3:1 unknown section "zzzzzzzzzzzz"; known sections: rerun, checks',
    ]);
  });

  it("reports type errors at the value with the section path", () => {
    expect(brief("checks:\n  config: yes please\n")).toEqual(['2:11 "checks.config" must be boolean (got string)']);
    expect(brief("rerun:\n  max_attempts: 0\n")).toEqual(['2:17 "rerun.max_attempts" must be >= 1']);
  });

  it("reports enum mistakes with the allowed values and a suggestion", () => {
    expect(brief("rerun:\n  mode: falied\n")).toEqual([
      '2:9 "rerun.mode" must be one of "failed", "all" (did you mean "failed"?)',
    ]);
  });

  it("folds anyOf alternatives into one readable problem", () => {
    expect(brief("rerun:\n  rules:\n    - log: 5\n")).toEqual([
      '3:12 "rerun.rules.0.log" must be string or array (got number)',
    ]);
    expect(brief("rerun:\n  rules:\n    - log: [a, 3]\n")).toEqual([
      '3:16 "rerun.rules.0.log.1" must be string (got number)',
    ]);
  });

  it("reports a missing required key at the item that lacks it", () => {
    expect(brief("rerun:\n  rules:\n    - jobs: [build]\n")).toEqual([
      '3:7 "rerun.rules.0" is missing required key "log"',
    ]);
  });

  it("reports YAML syntax errors with their position", () => {
    const r = validate("rerun:\n  branches: [main\nchecks: {}\n");
    expect(r.value).toBeUndefined();
    expect(r.problems.length).toBeGreaterThan(0);
    expect(r.problems[0]!.message).toMatch(/^YAML syntax error: /);
    expect(r.problems.every((p) => p.line >= 2 && p.severity === "error")).toBe(true);
  });

  it("reports duplicate keys at the second occurrence", () => {
    expect(brief("rerun:\n  enabled: true\n  enabled: false\n")).toEqual([
      "3:3 duplicate key: map keys must be unique",
    ]);
  });

  it("runs the semantic check only on schema-valid values and maps its paths", () => {
    expect(brief("rerun:\n  branches:\n    - main\n    - 'release/[0-9'\n")).toEqual([
      '4:7 unclosed "[" in glob "release/[0-9"',
    ]);
    const both = brief("rerun:\n  branches: ['[']\n  max_attempts: nope\n");
    expect(both).toEqual(['3:17 "rerun.max_attempts" must be integer (got string)']);
    // A typo alone does not hide the section's other problems.
    expect(brief("rerun:\n  branches: ['[']\n  max_atempts: 3\n")).toEqual([
      '2:14 unclosed "[" in glob "["',
      '3:3 unknown key "max_atempts" in "rerun" (did you mean "max_attempts"?)',
    ]);
  });

  it("keeps warnings apart from errors", () => {
    const r = validate("rerun:\n  max_attempts: 7\n  branches: ['*']\n");
    expect(r.problems).toMatchObject([
      { line: 2, column: 17, severity: "warning", message: "more than 5 attempts on every branch" },
    ]);
  });

  it("rejects a root that is not a map", () => {
    expect(brief("- rerun\n")[0]).toMatch(/^1:1 a policy file must be a map of sections/);
    expect(brief("just text\n")[0]).toMatch(/^1:1 a policy file must be a map of sections/);
  });

  it("reports each problem of a file, in document order where possible", () => {
    const text = "rerun:\n  enabld: true\n  max_attempts: x\n  branches: [1]\nchecks:\n  confg: true\n";
    expect(brief(text)).toEqual(
      [
        '2:3 unknown key "enabld" in "rerun" (did you mean "enabled"?)',
        '3:17 "rerun.max_attempts" must be integer (got string)',
        '4:14 "rerun.branches.0" must be string (got number)',
        '6:3 unknown key "confg" in "checks" (did you mean "config"?)',
      ].sort((a, b) => parseInt(a) - parseInt(b)),
    );
  });

  it("validates an admin document against its own schema", () => {
    const doc = ".github/steward/secrets.yml";
    expect(validate("secrets:\n  - name: TOKEN\n    repositories: ['web-*']\n", doc).problems).toEqual([]);
    expect(brief("secrets:\n  - name: token\n    repos: []\n", doc)).toEqual([
      '2:5 "secrets.0" is missing required key "repositories"',
      '2:11 "secrets.0.name" must match pattern "^[A-Z_][A-Z0-9_]*$"',
      '3:5 unknown key "repos" in "secrets.0" (did you mean "repositories"?)',
    ]);
    expect(brief("secrets:\n  - name: A\n    repositories: ['{a']\n", doc)).toEqual([
      '3:20 unbalanced "{" "}" in glob "{a"',
    ]);
    expect(validate("", doc).problems).toEqual([]);
  });

  it("rejects an unknown admin document with a suggestion", () => {
    expect(brief("a: 1\n", ".github/steward/secret.yml")).toEqual([
      '1:1 ".github/steward/secret.yml" is not a Steward policy document (did you mean ".github/steward/secrets.yml"?)',
    ]);
  });

  it("tells semantic checks whether they may look at the host: yes by default, no for untrusted text", () => {
    const seen: unknown[] = [];
    const probe = {
      name: "x",
      events: [],
      policy: {
        key: "x",
        schema: {},
        defaults: {},
        check: (_v: unknown, _r: unknown, options?: unknown) => void seen.push(options),
      },
      handle: async () => {},
    };
    const doc = {
      name: "d",
      events: [],
      documents: [
        {
          path: ".github/steward/d.yml",
          adminOnly: true,
          schema: {},
          defaults: {},
          check: (_v: unknown, _r: unknown, options?: unknown) => void seen.push(options),
        },
      ],
      handle: async () => {},
    };
    validatePolicyText("x:\n  a: 1\n", { file, handlers: [probe] });
    validatePolicyText("x:\n  a: 1\n", { file, handlers: [probe], resolveSources: true });
    validatePolicyText("x:\n  a: 1\n", { file, handlers: [probe], resolveSources: false });
    validatePolicyText("a: 1\n", { file, handlers: [doc], document: ".github/steward/d.yml", resolveSources: false });
    // Merged values are checked again by resolvePolicy: the option reaches that pass too.
    resolvePolicy({ org: { file: "o", text: "x:\n  a: 1\n" }, repo: { file: "r", text: "x:\n  b: 1\n" } }, [probe], {
      resolveSources: false,
    });
    expect(seen).toEqual([
      { resolveSources: true },
      { resolveSources: true },
      { resolveSources: false },
      { resolveSources: false },
      { resolveSources: false },
      { resolveSources: false },
      { resolveSources: false },
    ]);
  });

  it("turns a throwing semantic check into a problem", () => {
    const bad = {
      name: "x",
      events: [],
      policy: {
        key: "x",
        schema: {},
        defaults: {},
        check: () => {
          throw new Error("boom");
        },
      },
      handle: async () => {},
    };
    const r = validatePolicyText("x:\n  a: 1\n", { file, handlers: [bad] });
    expect(r.problems).toMatchObject([{ line: 2, column: 3, message: "x: check failed: boom" }]);
  });
});
