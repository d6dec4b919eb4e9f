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

const FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0, d: 0, g: 0, y: 0 };

/** Compiles the body and flags of a `/body/flags` literal; throws an Error whose message says what is wrong. */
export function compileRegex(spec: string, body: string, flags: string): RE2JS {
  const bad = [...flags].filter((f) => !(f in FLAGS)).join("");
  if (bad) throw new Error(`invalid regular expression flags "${bad}" in ${spec}`);
  if (body.length > MAX_REGEX_LENGTH) throw new Error(`regular expression ${spec.slice(0, 40)}... is longer than ${MAX_REGEX_LENGTH} characters`);
  for (const [pattern, what] of UNSUPPORTED) {
    if (pattern.test(withoutEscapedBackslashes(body))) {
      throw new Error(`regular expression ${spec} uses ${what}, which Steward does not support: patterns are matched in linear time (RE2 syntax)`);
    }
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

function shorten(spec: string): string {
  return spec.length > 80 ? `${spec.slice(0, 77)}...` : spec;
}

/** `\\1` is a backslash then `1`, not a backreference: drop escaped backslashes before looking. */
function withoutEscapedBackslashes(body: string): string {
  return body.replace(/\\\\/g, "");
}
