// Bad policy files: validation never throws and every problem points at FILE:LINE:COL.
import { describe, expect, it } from "vitest";
import { validatePolicyText } from "../../src/policy/validate.js";
import { builtinHandlers } from "../../handlers/index.js";
import { brokenCorpus, SECRETS_YML, STEWARD_YML } from "./policy-corpus.js";

const corpus = brokenCorpus();
// The secrets document names its sources; the service resolves them from its environment.
process.env.STEWARD_SECRET_NPM_TOKEN ??= "corpus-npm-token-value";
process.env.STEWARD_SECRET_DEPLOY_KEY ??= "corpus-deploy-key-value";

function validate(text: string, document: string | undefined) {
  const file = document ?? ".github/steward.yml";
  return validatePolicyText(text, { file, handlers: builtinHandlers, ...(document ? { document } : {}) });
}

describe("bad policy corpus", () => {
  it("starts from valid files", () => {
    expect(validate(STEWARD_YML, undefined).problems).toEqual([]);
    expect(validate(SECRETS_YML, ".github/steward/secrets.yml").problems).toEqual([]);
  });

  it(`has at least 200 broken files (${corpus.length}) across every category`, () => {
    expect(corpus.length).toBeGreaterThanOrEqual(200);
    const categories = new Set(corpus.map((f) => f.category.split(":")[0]));
    for (const c of ["syntax", "type", "unknown key", "bad glob", "bad regex", "bad time zone"])
      expect(categories).toContain(c);
  });

  it("never throws, finds a problem in every file, and places each one at FILE:LINE:COL", () => {
    const missed: string[] = [];
    let problems = 0;
    for (const f of corpus) {
      const file = f.document ?? ".github/steward.yml";
      let result: ReturnType<typeof validate>;
      expect(() => (result = validate(f.text, f.document)), f.name).not.toThrow();
      if (result!.problems.length === 0) missed.push(f.name);
      const lines = f.text.split(/\r\n|\r|\n/).length;
      for (const p of result!.problems) {
        problems++;
        const where = `${p.file}:${p.line}:${p.column}`;
        expect(where, f.name).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:\\d+:\\d+$`));
        expect(p.line, f.name).toBeGreaterThanOrEqual(1);
        expect(p.line, f.name).toBeLessThanOrEqual(lines + 1);
        expect(p.column, f.name).toBeGreaterThanOrEqual(1);
        expect(p.message.length, f.name).toBeGreaterThan(0);
        // A literal secret value must never be echoed back.
        expect(p.message, f.name).not.toContain("hunter2-literal-value");
      }
    }
    console.log(`policy corpus: ${corpus.length} files, ${problems} problems, ${missed.length} without a problem`);
    expect(missed).toEqual([]);
  });
});
