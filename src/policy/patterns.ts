// Pattern vocabulary shared by every policy section: globs (branches, jobs, repositories),
// text matchers (substring or /regex/flags), and durations (30s, 5m, 1h, 2d).
import picomatch from "picomatch";

/** Returns an error message when `glob` is not a usable glob, else undefined. */
export function globError(glob: string): string | undefined {
  if (glob.length === 0) return "empty glob";
  let depth = 0;
  for (const ch of glob) {
    if (ch === "[") depth++;
    else if (ch === "]") depth = Math.max(0, depth - 1);
  }
  if (depth !== 0) return `unclosed "[" in glob "${glob}"`;
  let braces = 0;
  for (const ch of glob) {
    if (ch === "{") braces++;
    else if (ch === "}") braces--;
    if (braces < 0) break;
  }
  if (braces !== 0) return `unbalanced "{" "}" in glob "${glob}"`;
  try {
    picomatch.makeRe(glob, { strictBrackets: true });
  } catch (e) {
    return `invalid glob "${glob}": ${(e as Error).message}`;
  }
  return undefined;
}

const matcherCache = new Map<string, (value: string) => boolean>();

/** True when `value` matches any of `globs`. `*` does not cross `/` in paths but does in names without slashes. */
export function matchesAny(globs: readonly string[], value: string): boolean {
  for (const glob of globs) {
    let m = matcherCache.get(glob);
    if (!m) {
      m = picomatch(glob, { dot: true });
      if (matcherCache.size > 5000) matcherCache.clear();
      matcherCache.set(glob, m);
    }
    if (m(value)) return true;
  }
  return false;
}

export interface TextMatcher {
  source: string;
  test(text: string): boolean;
}

const REGEX_LITERAL = /^\/(.+)\/([a-z]*)$/s;

/** `/re/flags` is a regular expression, anything else a plain substring. Throws a readable Error on a bad regex. */
export function textMatcher(spec: string): TextMatcher {
  const m = REGEX_LITERAL.exec(spec);
  if (!m) return { source: spec, test: (text) => text.includes(spec) };
  const [, body, flags] = m;
  const bad = flags!.replace(/[dgimsuy]/g, "");
  if (bad) throw new Error(`invalid regular expression flags "${bad}" in ${spec}`);
  let re: RegExp;
  try {
    re = new RegExp(body!, flags!.replace(/g|y/g, ""));
  } catch (e) {
    throw new Error(`invalid regular expression ${spec}: ${(e as Error).message.replace(/^Invalid regular expression: /, "")}`);
  }
  return { source: spec, test: (text) => re.test(text) };
}

/** Error message for a bad text matcher, else undefined. */
export function textMatcherError(spec: string): string | undefined {
  try {
    textMatcher(spec);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30s`, `5m`, `1h`, `2d`, `250ms`, or a number of seconds. Returns undefined when unparsable. */
export function parseDuration(spec: string | number): number | undefined {
  if (typeof spec === "number") return Number.isFinite(spec) && spec >= 0 ? spec * 1000 : undefined;
  const m = DURATION.exec(spec.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]);
}
