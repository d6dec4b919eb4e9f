import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { validatePolicyText } from "../../src/policy/validate.js";
import { testHandlers } from "./fixtures.js";

const VALID =
  "rerun:\n  enabled: true\n  max_attempts: 3\n  branches: [main, 'release/*']\n  rules:\n    - log: /ETIMEDOUT|ECONNRESET/i\n      jobs: [build]\nchecks:\n  config: true\n";

function assertWellFormed(text: string, document?: string) {
  const r = validatePolicyText(text, { file: "f.yml", handlers: testHandlers, ...(document ? { document } : {}) });
  const lines = text.split(/\r\n|\r|\n/).length;
  for (const p of r.problems) {
    expect(p.file).toBe("f.yml");
    expect(p.line).toBeGreaterThanOrEqual(1);
    expect(p.line).toBeLessThanOrEqual(lines + 1);
    expect(p.column).toBeGreaterThanOrEqual(1);
    expect(typeof p.message).toBe("string");
    expect(p.message.length).toBeGreaterThan(0);
  }
  return r;
}

describe("validation never throws", () => {
  it("survives mutations of a valid file", () => {
    const yamlChars = fc.constantFrom(..."\n :-[]{}&*!|>'\"%@`#,?\t\\abc01");
    const mutation = fc.tuple(fc.nat(VALID.length), fc.nat(6), fc.string({ unit: yamlChars, maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 5 }), (edits) => {
        let text = VALID;
        for (const [at, del, ins] of edits) text = text.slice(0, at) + ins + text.slice(at + del);
        assertWellFormed(text);
        assertWellFormed(text, ".github/steward/secrets.yml");
      }),
      { numRuns: 250 },
    );
  });

  it("survives arbitrary JSON values written as YAML", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom("rerun", "checks", "x"), (v, key) => {
        assertWellFormed(stringify({ [key]: v }));
        assertWellFormed(stringify(v));
      }),
      { numRuns: 250 },
    );
  });

  it("survives arbitrary text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (t) => void assertWellFormed(t)),
      { numRuns: 250 },
    );
  });

  it("survives hostile YAML features", () => {
    const hostile = [
      "a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
      "rerun: !!binary aGVsbG8=\n",
      "rerun: !custom {a: 1}\n",
      "? [a, b]\n: 1\n",
      "rerun:\n  ? {x: 1}\n  : 2\n",
      "__proto__:\n  polluted: true\n",
      "rerun:\n  __proto__: {enabled: false}\n",
      "<<: {rerun: {}}\n",
      "---\nrerun: {}\n---\nchecks: {}\n",
      "rerun: *missing\n",
      "rerun:\r\n  enabled: maybe\r\n",
      "\t\trerun: {}\n",
      "rerun: {enabled: true, enabled: false}\n",
      "x".repeat(100_000),
      "[".repeat(2000),
      "- ".repeat(3000) + "a",
      "rerun:\n  rules: " + "[".repeat(5000) + "]".repeat(5000) + "\n",
    ];
    for (const text of hostile) {
      const r = assertWellFormed(text);
      expect(r.problems.length, text.slice(0, 40)).toBeGreaterThan(0);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(
      assertWellFormed("rerun:\n  rules: " + "[".repeat(5000) + "]".repeat(5000) + "\n").problems[0],
    ).toMatchObject({ line: 2, message: "the document nests deeper than 64 levels" });
    // A YAML 1.1 document keeps its own booleans.
    expect(assertWellFormed("\uFEFFrerun:\n  enabled: true\n").problems).toEqual([]);
    expect(assertWellFormed("%YAML 1.1\n---\nrerun: {enabled: yes}\n").problems).toEqual([]);
  });
});
