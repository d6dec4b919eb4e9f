// Policy patterns are untrusted: globs and regexes run on a linear-time engine, what needs
// backtracking is rejected at validation with its file position, and YAML aliases are bounded by
// what they expand to, not by how often a plain value is reused.
import { execFileSync } from "node:child_process";
import fc from "fast-check";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import rerun from "../../handlers/rerun/index.js";
import deployments from "../../handlers/deployments/index.js";
import { scanLog, scanLogSync } from "../../handlers/rerun/scan.js";
import { compileGlob } from "../../src/policy/glob.js";
import { MatchBudget } from "../../src/policy/match-budget.js";
import { globError, matchesAny, textMatcher, textMatcherError } from "../../src/policy/patterns.js";
import { validatePolicyText } from "../../src/policy/validate.js";
import { HEALTH_BOUND_MS } from "../support/responsiveness.js";

const handlers = [rerun, deployments];
const brief = (text: string) =>
  validatePolicyText(text, { file: ".github/steward.yml", handlers }).problems.map(
    (p) => `${p.file}:${p.line}:${p.column} ${p.message}`,
  );

/**
 * Nested quantifiers: the shapes that make a backtracking engine exponential. `maxDepth` caps the
 * nesting, for comparisons that run JavaScript's own engine.
 */
const nestedQuantifiers = (maxDepth?: number): fc.Arbitrary<string> =>
  fc.letrec<{ re: string }>((tie) => ({
    re: fc.oneof(
      { depthSize: "small", withCrossShrink: true, ...(maxDepth === undefined ? {} : { maxDepth }) },
      fc.constantFrom("a", "aa", "a?", "\\w", "[ab]", "."),
      fc.tuple(tie("re"), fc.constantFrom("+", "*", "{1,5}", "?")).map(([r, q]) => `(?:${r})${q}`),
      fc.tuple(tie("re"), tie("re")).map(([a, b]) => `(?:${a}|${b})`),
      fc.tuple(tie("re"), tie("re")).map(([a, b]) => `${a}${b}`),
    ),
  })).re;
const nestedQuantifier = nestedQuantifiers();

describe("policy regexes", () => {
  it("match the catastrophic examples (and a property-based family of nested quantifiers) linearly", () => {
    expect(textMatcher("/(a+)+$/").test("a".repeat(40) + "!")).toBe(false);
    expect(textMatcher("/(a+)+$/").test("a".repeat(40))).toBe(true);
    expect(textMatcher("/(x+x+)+y/").test("x".repeat(5000))).toBe(false);
    fc.assert(
      fc.property(nestedQuantifier, fc.constantFrom("!", "b", ""), (re, tail) => {
        const m = textMatcher(`/(${re})+$/`);
        // Would take longer than the universe with JavaScript's engine on the worst of these.
        expect(typeof m.test("a".repeat(5000) + tail)).toBe("boolean");
      }),
      { numRuns: 200 },
    );
  });

  it("agree with JavaScript's engine on short inputs, flags included", () => {
    // JavaScript's engine is the reference, and it backtracks: its work grows exponentially with
    // the input's length and the quantifiers' nesting, and with unbounded nesting on ten characters
    // a single case could outlast the test's timeout. Three levels on five characters keep it small.
    fc.assert(
      fc.property(
        nestedQuantifiers(3),
        fc.constantFrom("", "i", "s", "m"),
        fc.string({ unit: fc.constantFrom("a", "A", "b", "\n", "!"), maxLength: 5 }),
        (re, flags, text) => {
          expect(textMatcher(`/${re}$/${flags}`).test(text)).toBe(new RegExp(`${re}$`, flags).test(text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("reject backreferences and lookaround with a reason, and accept an escaped backslash before a digit", () => {
    for (const spec of ["/(a)\\1/", "/(?<x>a)\\k<x>/"])
      expect(textMatcherError(spec)).toMatch(/uses backreferences.*linear time/);
    for (const spec of ["/a(?=b)/", "/a(?!b)/", "/(?<=a)b/", "/(?<!a)b/"])
      expect(textMatcherError(spec)).toMatch(/uses lookaround.*linear time/);
    expect(textMatcherError("/\\\\1/")).toBeUndefined();
    expect(textMatcher("/\\\\1/").test("C:\\1")).toBe(true);
  });

  it("are rejected at validation at FILE:LINE:COL when they need backtracking", () => {
    const problems = brief(
      'rerun:\n  enabled: true\n  rules:\n    - log: ["ok", "/(\\\\w+)\\\\1/"]\n    - log: ["/x(?!y)/"]\n',
    );
    expect(problems).toEqual([
      expect.stringMatching(/^\.github\/steward\.yml:4:19 regular expression \/\(\\w\+\)\\1\/ uses backreferences/),
      expect.stringMatching(/^\.github\/steward\.yml:5:13 regular expression \/x\(\?!y\)\/ uses lookaround/),
    ]);
  });
});

describe("bounded programs", () => {
  it("refuse the issue's linear-time but slow regex at validation, at FILE:LINE:COL, with the reason", () => {
    const slow = `/${"[a-z]{1000}".repeat(20)}[#%]/`;
    expect(slow.slice(1, -1)).toHaveLength(224);
    const problems = brief(`rerun:\n  enabled: true\n  rules:\n    - log: ["ok", ${JSON.stringify(slow)}]\n`);
    expect(problems).toEqual([
      expect.stringMatching(
        /^\.github\/steward\.yml:4:19 regular expression \/\[a-z\]\{1000\}.*\.\.\. expands to at least 20001 instructions, more than the 2000 Steward runs \(counted repetitions/,
      ),
    ]);
    // Just over the bound: compiled, then refused by the program's actual size.
    expect(brief('rerun:\n  enabled: true\n  rules:\n    - log: ["/[a-z]{1000}[0-9]{1000}x/"]\n')).toEqual([
      expect.stringMatching(
        /^\.github\/steward\.yml:4:13 regular expression .* compiles to 2003 instructions, more than the 2000 Steward runs/,
      ),
    ]);
    // One counted repetition of RE2's largest count is still fine.
    expect(brief('rerun:\n  enabled: true\n  rules:\n    - log: ["/x[a-z]{1000}y/"]\n')).toEqual([]);
  });

  it("refuse a file whose patterns add up to too much, at the pattern that goes over", () => {
    const log = Array.from({ length: 12 }, (_, i) => `"/${i}[a-z]{999}/"`).join(", ");
    const problems = brief(`rerun:\n  enabled: true\n  rules:\n    - log: [${log}]\n`);
    expect(problems).toEqual([
      expect.stringMatching(
        /^\.github\/steward\.yml:4:\d+ the file's patterns add up to more than 10000 compiled instructions \(\d+ with this one\)/,
      ),
    ]);
    // The column is that of the tenth pattern, the first past the total.
    const col = Number(/:4:(\d+) /.exec(problems[0]!)![1]);
    expect(`    - log: [${log}]`.slice(col - 1)).toMatch(/^"\/9\[a-z\]/);
  });

  it("count globs into the file's total: each within its own bound, many are refused", () => {
    const globs = Array.from({ length: 8 }, (_, i) => `'${i}${"*a".repeat(500)}'`).join(", ");
    expect(brief(`rerun:\n  enabled: true\n  branches: [${globs}]\n`)).toEqual([
      expect.stringMatching(
        /^\.github\/steward\.yml:3:\d+ the file's patterns add up to more than 10000 compiled instructions/,
      ),
    ]);
    expect(globError(`${"*a".repeat(500)}`)).toBeUndefined();
  });
});

describe("policy file bounds", () => {
  it("refuse a file larger than the bound before parsing it", () => {
    const text = `rerun:\n  enabled: true\n${"# padding\n".repeat(14_000)}`;
    expect(brief(text)).toEqual([
      `.github/steward.yml:1:1 the file is ${text.length} characters long, more than the 65536 Steward reads`,
    ]);
  });

  it("refuse a file of too many values, aliases or not, quickly", () => {
    // Parsing and locating problems in these once took seconds; the test's timeout stops a regression.
    const list = `rerun:\n  branches: [${Array(30_000).fill("1").join(",")}]\n`;
    expect(brief(list)).toEqual([
      expect.stringMatching(/^\.github\/steward\.yml:2:\d+ the document has more than 20000 values$/),
    ]);
    const nested = `rerun:\n  branches: [${Array(2300).fill("[1,1,1,1,1,1,1,1,1]").join(",")}]\n`;
    expect(brief(nested)).toEqual([
      expect.stringMatching(/^\.github\/steward\.yml:\d+:\d+ the document has more than 20000 values$/),
    ]);
  });

  it("refuse nesting deeper than the bound at the place it goes too deep, block or flow", () => {
    expect(brief(`rerun:\n  branches: ${"[".repeat(100)}${"]".repeat(100)}\n`)).toEqual([
      expect.stringMatching(/^\.github\/steward\.yml:2:\d+ the document nests deeper than 64 levels$/),
    ]);
    expect(
      brief(`rerun:\n  rules:\n${Array.from({ length: 80 }, (_, i) => `${"  ".repeat(i + 2)}- `).join("\n")}x\n`),
    ).toEqual([expect.stringMatching(/^\.github\/steward\.yml:\d+:\d+ the document nests deeper than 64 levels$/)]);
    // Ordinary nesting is fine.
    expect(brief("rerun:\n  enabled: true\n  rules:\n    - jobs: [a]\n      log: [x]\n")).toEqual([]);
  });

  it("report duplicate keys at the repeat, in a map of thousands of keys", () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `  k${i}: 1`).join("\n");
    expect(brief(`rerun:\n${keys}\n  k0: 2\n`)).toEqual([
      ".github/steward.yml:5002:3 duplicate key: map keys must be unique",
    ]);
  });
});

describe("policy globs", () => {
  it("match the catastrophic examples linearly", () => {
    expect(matchesAny(["*a*a*a*a*a*a*a*a*a*a*c"], "a".repeat(40))).toBe(false);
    expect(matchesAny(["*-*-*-*-*-rc"], "-".repeat(120))).toBe(false);
    expect(matchesAny(["*-*-*-*-*-rc"], "-".repeat(120) + "rc")).toBe(true);
    expect(matchesAny(["+(a|aa)+(a|aa)c"], "a".repeat(5000))).toBe(false);
  });

  it("agree with picomatch on the common syntax", () => {
    const piece = fc.constantFrom("a", "b", "-", "*", "?", "{a,b}", "[ab]", "[a-b]", "{a,-*}");
    const segment = fc.oneof(
      fc.constant("**"),
      fc.array(piece, { minLength: 1, maxLength: 4 }).map((p) => p.join("")),
    );
    const name = fc.string({ unit: fc.constantFrom("a", "b", "-", "/"), minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 3 }), name, (segments, value) => {
        const glob = segments.join("/");
        // picomatch lets a trailing `/` through `*`, and its `x/**` matches `x` only for a literal x
        // (see "keep the documented semantics"), and runs of three stars are its own quirk; empty
        // path segments are not names Steward matches. A `**` inside a segment is `*` for Steward
        // (documented) but a globstar for picomatch when a brace group follows it (`**{a,b}`), so
        // only whole-segment `**` is compared.
        const starsInSegment = segments.some((seg) => seg !== "**" && seg.includes("**"));
        fc.pre(
          !value.endsWith("/") &&
            !value.startsWith("/") &&
            !value.includes("//") &&
            !glob.endsWith("/**") &&
            !glob.includes("***") &&
            !starsInSegment,
        );
        expect(compileGlob(glob)(value)).toBe(picomatch(glob, { dot: true })(value));
      }),
      // A fixed seed: CI runs the same 2,000 cases every time (a new disagreement is found by changing it).
      { numRuns: 2000, seed: 20261124 },
    );
  });

  it("keep the documented semantics", () => {
    const cases: [string, string, boolean][] = [
      ["release/*", "release/1.2", true],
      ["release/*", "release/1/2", false],
      ["release/**", "release", true],
      ["**/ci.yml", "ci.yml", true],
      ["a/**/b", "a/b", true],
      ["a/**/b", "a/x/y/b", true],
      ["!main", "dev", true],
      ["!main", "main", false],
      ["[!a]x", "bx", true],
      ["test (*)", "test (ubuntu-latest, 20)", true],
      ["@(a|b)c", "bc", true],
      ["v\\*", "v*", true],
      ["v\\*", "v1", false],
    ];
    for (const [glob, value, expected] of cases)
      expect([glob, value, compileGlob(glob)(value)]).toEqual([glob, value, expected]);
  });

  it("reject malformed globs and negated extglobs with a reason", () => {
    expect(globError("release/[0-9")).toMatch(/unclosed "\["/);
    expect(globError("{a,b")).toMatch(/unbalanced "\{" "\}"/);
    expect(globError("!(main)")).toMatch(/negated extglob.*not supported/);
    expect(globError("x".repeat(2000))).toMatch(/longer than/);
    expect(globError("release/*")).toBeUndefined();
  });
});

describe("log scanning", () => {
  it("matches line by line, also in logs of several MiB, and yields between slices", async () => {
    const log = ("a".repeat(40) + "!\n").repeat(100_000) + "npm ERR! network read ECONNRESET\n";
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const scanned = await scanLog(log, ["/(a+)+$/", "ECONNRESET", "/^npm ERR!/", "/ERR!.*\\n.*a/s"], new MatchBudget());
    clearInterval(timer);
    expect([...scanned.matched].sort()).toEqual(["/^npm ERR!/", "ECONNRESET"]);
    expect(ticks).toBeGreaterThan(0);
    expect([...scanLogSync("x\n" + "b".repeat(200_000) + "ECONNRESET", ["ECONNRESET"]).matched]).toEqual([
      "ECONNRESET",
    ]);
  });

  it("stops a match at the delivery's remaining time, in a worker, and says so; the next match gets a fresh worker", async () => {
    // Program of 994 instructions against random a/b lines: about 0.7 s per 16 KiB line, 2 min in all.
    let seed = 7;
    const line = () =>
      Array.from({ length: 16 * 1024 }, () =>
        (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0x10000 ? "a" : "b",
      ).join("");
    const log = Array.from({ length: 192 }, () => `${line()}\n`).join("");
    let ticks = 0;
    let longest = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      ticks++;
    }, 10);
    const budget = new MatchBudget(1500);
    const started = performance.now();
    const scanned = await scanLog(log, ["/a[ab]{990}[#%]/"], budget);
    clearInterval(timer);
    expect(scanned.stopped).toMatch(
      /^matching 1 log patterns against a \d+-character job log was stopped at its bound of 1500 ms$/,
    );
    expect([...scanned.matched]).toEqual([]);
    // Generous: stopped near its deadline, not after the minutes the match would take.
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(ticks).toBeGreaterThan(10);
    // The match runs off the event loop: the loop keeps turning (bound shared with the liveness tests).
    expect(longest).toBeLessThan(HEALTH_BOUND_MS);
    // The budget is spent: the next log of the delivery is not matched at all.
    expect((await scanLog(log, ["/a[ab]{990}[#%]/"], budget)).stopped).toMatch(
      /the delivery's matching time was spent/,
    );
    // Another delivery's match runs on a replacement worker.
    const fresh = await scanLog(
      `${"x\n".repeat(600_000)}npm ERR! ECONNRESET\n`,
      ["/^npm ERR!.*ECONNRESET$/", "ETIMEDOUT"],
      new MatchBudget(),
    );
    expect(fresh).toEqual({ matched: new Set(["/^npm ERR!.*ECONNRESET$/"]) });
  }, 30_000);

  it("leaves no worker keeping a process alive once its matches are done (the CLI's simulate exits)", () => {
    const code = `import { boundedMatch } from ${JSON.stringify(new URL("../../src/policy/bounded-match.ts", import.meta.url).pathname)};
      const r = await boundedMatch("x\\nfoo#\\n".repeat(400000), [{ source: "/o#$/", size: 5, re2: { source: "o#$", flags: 0 }, test: () => false }], { deadlineMs: 10000, what: "a log" });
      console.log([...r.matched].join());`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
      timeout: 30_000,
      encoding: "utf8",
    });
    expect(out.trim()).toBe("/o#$/");
  }, 40_000);

  it("matches short texts on the calling thread, and refuses to when the work is large", () => {
    expect(scanLogSync("x\nnpm ERR! ECONNRESET\n", ["ECONNRESET", "/^npm/"])).toEqual({
      matched: new Set(["ECONNRESET", "/^npm/"]),
    });
    const big = scanLogSync("ab".repeat(8 * 1024), ["/a[ab]{990}[#%]/"]);
    expect(big.stopped).toMatch(/more work than is done without a deadline/);
  });
});

describe("YAML aliases", () => {
  it("accept a plain value aliased a hundred times", () => {
    const jobs = Array.from({ length: 100 }, () => "*job").join(", ");
    const text = `rerun:\n  enabled: true\n  branches: [&job main]\n  rules:\n    - jobs: [${jobs}]\n`;
    expect(brief(text)).toEqual([]);
  });

  it("reject a document that expands to too much, at the alias", () => {
    const lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i <= 8; i++)
      lines.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(", ")}]`,
      );
    const problems = brief(`${lines.join("\n")}\n`);
    expect(problems).toEqual([
      expect.stringMatching(
        /^\.github\/steward\.yml:\d+:\d+ the document expands to more than 20000 values through aliases$/,
      ),
    ]);
  });
});
