// Pattern vocabulary shared by every policy section: globs (branches, jobs, repositories),
// text matchers (substring or /regex/flags), and durations (30s, 5m, 1h, 2d).
import { compileGlob, GlobSyntaxError, type GlobMatcher } from "./glob.js";
import { compileRegex } from "./regex.js";

/**
 * Most instructions the patterns of one policy file may add up to. Each pattern is bounded on its
 * own (MAX_PROGRAM_SIZE), but a file of a thousand of them would still cost seconds to compile and
 * match on the event loop; validation refuses the pattern that goes over.
 */
export const MAX_PATTERN_TOTAL = 10_000;

/** The instructions counted so far while a file is validated (see withPatternTally). */
let tally: { used: number; max: number } | undefined;

/** Runs `check` (synchronous) counting the program size of every pattern it validates against `max`. */
export function withPatternTally<T>(check: () => T, max = MAX_PATTERN_TOTAL): T {
  const outer = tally;
  tally = { used: 0, max };
  try {
    return check();
  } finally {
    tally = outer;
  }
}

/** Past the bound the file is refused already: its further patterns are not even compiled. */
const tallySpent = () => tally !== undefined && tally.used > tally.max;

function overTally(size: number): string | undefined {
  if (!tally) return undefined;
  tally.used += size;
  if (tally.used <= tally.max) return undefined;
  return `the file's patterns add up to more than ${tally.max} compiled instructions (${tally.used} with this one); use fewer or simpler patterns`;
}

/** Returns an error message when `glob` is not a usable glob, else undefined. */
export function globError(glob: string): string | undefined {
  if (tallySpent()) return undefined;
  try {
    const m = cached(matcherCache, glob, () => compileGlob(glob));
    return overTally(m.size);
  } catch (e) {
    if (e instanceof GlobSyntaxError) return e.message;
    return `invalid glob "${glob}": ${(e as Error).message}`;
  }
}

/** Compiled patterns, keyed by the policy text; bounded so many distinct policies cannot grow it. */
const MAX_CACHED = 5000;
const matcherCache = new Map<string, GlobMatcher>();
const textCache = new Map<string, TextMatcher>();

function cached<T>(cache: Map<string, T>, key: string, make: () => T): T {
  let v = cache.get(key);
  if (v === undefined) {
    v = make();
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, v);
  }
  return v;
}

/**
 * True when `value` matches any of `globs` (see glob.ts for the syntax), in time linear in `value`.
 * `*` does not cross `/`; `**` as a whole segment does. A malformed glob matches nothing (validation
 * reports it before a policy is used).
 */
export function matchesAny(globs: readonly string[], value: string): boolean {
  for (const glob of globs) {
    const m = cached(matcherCache, glob, () => {
      try {
        return compileGlob(glob);
      } catch {
        return Object.assign(() => false, { size: 0 });
      }
    });
    if (m(value)) return true;
  }
  return false;
}

export interface TextMatcher {
  source: string;
  /** Instructions of the compiled regular expression; 0 for a substring. */
  size: number;
  /** For a regular expression: its RE2 source and flags, as matched (bounded-match.ts compiles it again in its worker). */
  re2?: { source: string; flags: number };
  /** Whether the matcher matches somewhere in `text`, in time linear in `text`. */
  test(text: string): boolean;
}

const REGEX_LITERAL = /^\/(.+)\/([a-z]*)$/s;

/** `/re/flags` is a regular expression (RE2 syntax), anything else a plain substring. Throws a readable Error on a bad regex. */
export function textMatcher(spec: string): TextMatcher {
  return cached(textCache, spec, () => {
    const m = REGEX_LITERAL.exec(spec);
    if (!m) return { source: spec, size: 0, test: (text: string) => text.includes(spec) };
    const re = compileRegex(spec, m[1]!, m[2]!);
    return {
      source: spec,
      size: re.programSize(),
      re2: { source: re.pattern(), flags: re.flags() },
      test: (text: string) => re.test(text),
    };
  });
}

/** Error message for a bad text matcher, else undefined. */
export function textMatcherError(spec: string): string | undefined {
  if (tallySpent()) return undefined;
  try {
    return overTally(textMatcher(spec).size);
  } catch (e) {
    return (e as Error).message;
  }
}

// Policies write durations as Steward's settings do.
export { parseDuration } from "../config/duration.js";
