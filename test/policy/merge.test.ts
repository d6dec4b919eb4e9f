import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applySectionDefaults, mergePolicy } from "../../src/policy/merge.js";
import { resolvePolicy } from "../../src/policy/resolve.js";
import { testHandlers } from "./fixtures.js";

describe("mergePolicy", () => {
  it("merges maps deeply, replaces lists, and lets the overriding side win", () => {
    const org = { rerun: { enabled: true, max_attempts: 2, branches: ["main", "develop"], nested: { a: 1, b: 2 } } };
    const repo = { rerun: { max_attempts: 4, branches: ["release/*"], nested: { b: 3 } } };
    expect(mergePolicy(org, repo)).toEqual({
      rerun: { enabled: true, max_attempts: 4, branches: ["release/*"], nested: { a: 1, b: 3 } },
    });
  });

  it("keeps the base when the override is undefined, but an explicit false or empty list wins", () => {
    expect(mergePolicy({ a: true, l: [1] }, { a: false, l: [] })).toEqual({ a: false, l: [] });
    expect(mergePolicy({ a: 1 }, undefined)).toEqual({ a: 1 });
  });

  it("never modifies its inputs and never shares structure with them", () => {
    const base = { m: { l: [1, 2] } };
    const over = { m: { k: { x: 1 } } };
    const out = mergePolicy(base, over) as { m: { l: number[]; k: { x: number } } };
    out.m.l.push(3);
    out.m.k.x = 9;
    expect(base).toEqual({ m: { l: [1, 2] } });
    expect(over).toEqual({ m: { k: { x: 1 } } });
  });

  it("satisfies the merge laws for arbitrary JSON", () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    fc.assert(
      fc.property(json, json, json, (a, b, c) => {
        expect(mergePolicy(a, a)).toEqual(a);
        if (Array.isArray(b) || typeof b !== "object" || b === null) expect(mergePolicy(a, b)).toEqual(b);
        // Merging the same override twice changes nothing more.
        expect(mergePolicy(mergePolicy(a, c), c)).toEqual(mergePolicy(a, c));
        const isMap = (v: unknown): v is Record<string, unknown> =>
          typeof v === "object" && v !== null && !Array.isArray(v);
        if (isMap(a) && isMap(b)) {
          const m = mergePolicy(a, b) as Record<string, unknown>;
          expect(new Set(Object.keys(m))).toEqual(new Set([...Object.keys(a), ...Object.keys(b)]));
          for (const k of Object.keys(b)) if (!(isMap(a[k]) && isMap(b[k]))) expect(m[k]).toEqual(b[k]);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("applySectionDefaults", () => {
  it("puts every section's defaults under the given values and drops unknown keys", () => {
    expect(applySectionDefaults({ rerun: { max_attempts: 5 }, other: 1 }, testHandlers)).toEqual({
      rerun: { enabled: true, max_attempts: 5, branches: ["main"], rules: [] },
      checks: { config: true },
    });
    expect(applySectionDefaults({ checks: null }, testHandlers).checks).toEqual({ config: true });
    expect(applySectionDefaults(undefined, testHandlers).checks).toEqual({ config: true });
  });
});

describe("resolvePolicy", () => {
  const org = (text: string) => ({ file: "acme/.github:.github/steward.yml", text });
  const repo = (text: string) => ({ file: "acme/web:.github/steward.yml", text });

  it("merges the org file under the repository file with defaults under both", () => {
    const r = resolvePolicy(
      {
        org: org("rerun:\n  max_attempts: 4\n  branches: [main, develop]\n"),
        repo: repo("rerun:\n  branches: [trunk]\nchecks:\n  config: false\n"),
      },
      testHandlers,
    );
    expect(r.problems).toEqual([]);
    expect(r.sources).toEqual(["acme/.github:.github/steward.yml", "acme/web:.github/steward.yml"]);
    expect(r.sections).toEqual({
      rerun: { enabled: true, max_attempts: 4, branches: ["trunk"], rules: [] },
      checks: { config: false },
    });
  });

  it("gives defaults when neither file exists", () => {
    const r = resolvePolicy(
      { org: { file: "o", text: undefined }, repo: { file: "r", text: undefined } },
      testHandlers,
    );
    expect(r).toMatchObject({
      problems: [],
      sources: [],
      sections: { rerun: { max_attempts: 2 }, checks: { config: true } },
    });
  });

  it("drops a section with errors in either file, keeps the others, and reports each problem in its own file", () => {
    const r = resolvePolicy(
      { org: org("rerun:\n  max_atempts: 4\n"), repo: repo("checks:\n  config: false\n") },
      testHandlers,
    );
    expect(Object.keys(r.sections)).toEqual(["checks"]);
    expect(r.problems).toMatchObject([{ file: "acme/.github:.github/steward.yml", line: 2, column: 3 }]);
  });

  it("drops everything when a file is not valid YAML", () => {
    const r = resolvePolicy({ org: org("checks:\n  config: false\n"), repo: repo("rerun: [\n") }, testHandlers);
    expect(r.sections).toEqual({});
    expect(r.problems[0]).toMatchObject({ file: "acme/web:.github/steward.yml", severity: "error" });
  });

  it("runs the semantic check on the merged value and blames the file whose value won", () => {
    // Neither file alone warns (each sees a default on the other side); the merge does.
    const r = resolvePolicy(
      { org: org("rerun:\n  max_attempts: 7\n"), repo: repo("rerun:\n  branches: ['*']\n") },
      testHandlers,
    );
    expect(r.problems).toMatchObject([
      {
        file: "acme/.github:.github/steward.yml",
        line: 2,
        column: 17,
        severity: "warning",
        message: "more than 5 attempts on every branch",
      },
    ]);
    expect(r.sections.rerun).toMatchObject({ max_attempts: 7, branches: ["*"] });
  });

  it("does not report the same problem twice when one file alone already had it", () => {
    const r = resolvePolicy({ org: org("checks: {}\n"), repo: repo("rerun:\n  branches: ['[x']\n") }, testHandlers);
    expect(r.problems).toHaveLength(1);
    expect(r.sections.rerun).toBeUndefined();
  });
});
