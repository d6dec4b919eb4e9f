// `/regex/flags` text matchers from policy files run against text Steward does not control (job logs
// of several MiB). JavaScript's engine backtracks (`/(a+)+$/` against forty `a` and a `!` never ends),
// so every policy regex is compiled by re2js, whose automaton runs in time linear in the text.
// What RE2 cannot do in linear time (backreferences, lookaround) is rejected with a clear message.
import { RE2JS } from "re2js";

export const MAX_REGEX_LENGTH = 2048;
/**
 * Most instructions a compiled pattern may have. Matching costs about the text's length times the
 * program's size, and counted repetitions multiply the program (`[a-z]{1000}` is 1,002 instructions,
 * twenty of them 20,003): a short pattern can cost seconds per line, so the program is bounded, not
 * only the text of the pattern.
 */
export const MAX_PROGRAM_SIZE = 2000;

const UNSUPPORTED: readonly [RegExp, string][] = [
  [/\\[1-9]|\\k</, "backreferences (\\1, \\k<name>)"],
  [/\(\?<?[=!]/, "lookaround ((?=...), (?!...), (?<=...), (?<!...))"],
];

const FLAGS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
  u: 0,
  d: 0,
  g: 0,
  y: 0,
};

/** Compiles the body and flags of a `/body/flags` literal; throws an Error whose message says what is wrong. */
export function compileRegex(spec: string, body: string, flags: string): RE2JS {
  const bad = [...flags].filter((f) => !(f in FLAGS)).join("");
  if (bad) throw new Error(`invalid regular expression flags "${bad}" in ${spec}`);
  if (body.length > MAX_REGEX_LENGTH)
    throw new Error(`regular expression ${spec.slice(0, 40)}... is longer than ${MAX_REGEX_LENGTH} characters`);
  for (const [pattern, what] of UNSUPPORTED) {
    if (pattern.test(withoutEscapedBackslashes(body))) {
      throw new Error(
        `regular expression ${spec} uses ${what}, which Steward does not support: patterns are matched in linear time (RE2 syntax)`,
      );
    }
  }
  // Compiling itself costs time in the program's size: a pattern that is plainly too large is
  // refused from its text, before it is compiled.
  const estimate = expandedSize(body);
  if (estimate > 2 * MAX_PROGRAM_SIZE) {
    throw new Error(
      `regular expression ${shorten(spec)} expands to at least ${estimate} instructions, more than the ${MAX_PROGRAM_SIZE} Steward runs ` +
        `(counted repetitions such as {1000} multiply the pattern; use fewer or smaller counts, or .* / + instead)`,
    );
  }
  let flagBits = 0;
  for (const f of flags) flagBits |= FLAGS[f]!;
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(body), flagBits);
  } catch (e) {
    const reason = (e as Error).message.replace(/^error parsing regexp: /, "");
    throw new Error(`invalid regular expression ${spec}: ${reason} (patterns use RE2 syntax)`);
  }
  if (re.programSize() > MAX_PROGRAM_SIZE) {
    throw new Error(
      `regular expression ${shorten(spec)} compiles to ${re.programSize()} instructions, more than the ${MAX_PROGRAM_SIZE} Steward runs ` +
        `(counted repetitions such as {1000} multiply the pattern; use fewer or smaller counts, or .* / + instead)`,
    );
  }
  return re;
}

/**
 * A lower estimate of the program `body` compiles to: one per atom, a group the sum of its
 * atoms, and a counted repetition `{n}`, `{n,}` or `{n,m}` its atom times its largest count.
 */
export function expandedSize(body: string): number {
  const frames: number[] = [0];
  let last = 0;
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch === "\\") {
      // `\p{Greek}`, `\x{41}`: the braces belong to the escape.
      const braces = /^[pPx]\{[^}]*\}/.exec(body.slice(i + 1, i + 40));
      i += braces ? braces[0].length : 1;
      last = 1;
      frames[frames.length - 1]! += 1;
    } else if (ch === "[") {
      let j = i + 1;
      if (body[j] === "^") j++;
      if (body[j] === "]") j++;
      while (j < body.length && body[j] !== "]") j += body[j] === "\\" ? 2 : 1;
      i = j;
      last = 1;
      frames[frames.length - 1]! += 1;
    } else if (ch === "(") {
      frames.push(0);
      last = 0;
    } else if (ch === ")") {
      last = frames.length > 1 ? frames.pop()! : 0;
      frames[frames.length - 1]! += last;
    } else if (ch === "{") {
      const m = /^\{(\d+)(?:,(\d*))?\}/.exec(body.slice(i, i + 16));
      if (m) {
        const count = Math.max(Number(m[1]), m[2] ? Number(m[2]) : 0);
        frames[frames.length - 1]! += last * (count - 1);
        last *= count;
        i += m[0].length - 1;
      } else {
        last = 1;
        frames[frames.length - 1]! += 1;
      }
    } else if (ch !== "|" && ch !== "*" && ch !== "+" && ch !== "?") {
      last = 1;
      frames[frames.length - 1]! += 1;
    }
  }
  return frames.reduce((a, b) => a + b, 0);
}

function shorten(spec: string): string {
  return spec.length > 80 ? `${spec.slice(0, 77)}...` : spec;
}

/** `\\1` is a backslash then `1`, not a backreference: drop escaped backslashes before looking. */
function withoutEscapedBackslashes(body: string): string {
  return body.replace(/\\\\/g, "");
}
