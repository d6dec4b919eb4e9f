// Globs from policy files (branches, jobs, steps, environments, repositories) are written by anyone
// who can push, and matched against names Steward does not control either. A backtracking matcher
// takes exponential time on `*a*a*a*a*c`, so a glob is translated into RE2 syntax once and matched by
// re2js, whose automaton runs in time linear in the name whatever the glob.
//
// Syntax: `*` any run of characters except `/`; `**` as a whole path segment any run including `/`
// (`a/**` also matches `a`, `**/b` also `b`, `a/**/b` also `a/b`); `?` one character except `/`;
// `[abc]`, `[a-z]`, `[!a]`/`[^a]` one character; `{a,b}` alternatives (nestable); `@(a|b)`, `?(a|b)`,
// `+(a|b)`, `*(a|b)` extglobs; `\x` a literal x; a leading `!` negates the whole glob.
// `!(…)` extglobs need lookaround, which no linear-time engine offers: they are rejected.
import { RE2JS } from "re2js";
import { MAX_PROGRAM_SIZE } from "./regex.js";

export const MAX_GLOB_LENGTH = 1024;

export class GlobSyntaxError extends Error {}

const SPECIAL = /[\\.+*?()|[\]{}^$]/;

function literal(ch: string): string {
  return SPECIAL.test(ch) ? `\\${ch}` : ch;
}

/** Translates `glob` into an anchored RE2 expression; throws GlobSyntaxError on a malformed glob. */
export function globToRe2(glob: string): { source: string; negated: boolean } {
  if (glob.length === 0) throw new GlobSyntaxError("empty glob");
  if (glob.length > MAX_GLOB_LENGTH) throw new GlobSyntaxError(`glob longer than ${MAX_GLOB_LENGTH} characters`);
  let negated = false;
  let start = 0;
  while (glob[start] === "!" && glob[start + 1] !== "(") {
    negated = !negated;
    start++;
  }
  const out = new Translator(glob, start).run();
  return { source: `^(?:${out})$`, negated };
}

/** Reads the glob left to right; `stops` are the characters that end the group being read. */
class Translator {
  private i: number;
  constructor(
    private readonly glob: string,
    start: number,
  ) {
    this.i = start;
  }

  run(): string {
    const out = this.sequence("");
    if (this.i < this.glob.length)
      throw new GlobSyntaxError(`unbalanced "${this.glob[this.i]}" in glob "${this.glob}"`);
    return out;
  }

  private fail(message: string): never {
    throw new GlobSyntaxError(`${message} in glob "${this.glob}"`);
  }

  /** A sequence up to (not including) one of `stops` at this nesting level, or the end. */
  private sequence(stops: string): string {
    const g = this.glob;
    let out = "";
    while (this.i < g.length) {
      const ch = g[this.i]!;
      if (stops.includes(ch)) return out;
      if (ch === "\\") {
        if (this.i + 1 >= g.length) this.fail('trailing "\\"');
        out += literal(g[this.i + 1]!);
        this.i += 2;
      } else if ("@?+*!".includes(ch) && g[this.i + 1] === "(") {
        out += this.extglob(ch);
      } else if (ch === "*") {
        out += this.star();
      } else if (ch === "?") {
        out += "[^/]";
        this.i++;
      } else if (ch === "[") {
        out += this.bracket();
      } else if (ch === "{") {
        out += this.braces();
      } else if (ch === "}") {
        this.fail('unbalanced "{" "}"');
      } else if (ch === "/" && this.trailingGlobstar()) {
        // `a/**` also matches `a` itself.
        out += "(?:/.*)?";
        this.i = g.length;
      } else {
        out += literal(ch);
        this.i++;
      }
    }
    return out;
  }

  /** At a `/` followed only by `**` up to the end of the glob. */
  private trailingGlobstar(): boolean {
    const rest = this.glob.slice(this.i + 1);
    return rest === "**";
  }

  private star(): string {
    const g = this.glob;
    const begin = this.i;
    while (g[this.i] === "*") this.i++;
    const double = this.i - begin === 2;
    const atSegmentStart = begin === 0 || g[begin - 1] === "/";
    const atSegmentEnd = this.i === g.length || g[this.i] === "/";
    if (!double || !atSegmentStart || !atSegmentEnd) return "[^/]*";
    // `**` as a whole segment: `**/` may match nothing at all, `/**` at the end may match nothing.
    if (g[this.i] === "/") {
      this.i++;
      return "(?:.*/)?";
    }
    return "(?s:.*)";
  }

  private extglob(kind: string): string {
    if (kind === "!") this.fail('negated extglob "!(...)" is not supported (it needs lookaround)');
    this.i += 2;
    const alternatives: string[] = [];
    for (;;) {
      alternatives.push(this.sequence("|)"));
      if (this.i >= this.glob.length) this.fail('unclosed "("');
      if (this.glob[this.i++] === ")") break;
    }
    const group = `(?:${alternatives.join("|")})`;
    return group + ({ "@": "", "?": "?", "+": "+", "*": "*" } as Record<string, string>)[kind]!;
  }

  private braces(): string {
    this.i++;
    const alternatives: string[] = [];
    for (;;) {
      alternatives.push(this.sequence(",}"));
      if (this.i >= this.glob.length) this.fail('unbalanced "{" "}"');
      if (this.glob[this.i++] === "}") break;
    }
    return `(?:${alternatives.join("|")})`;
  }

  private bracket(): string {
    const g = this.glob;
    let j = this.i + 1;
    let negate = false;
    if (g[j] === "!" || g[j] === "^") {
      negate = true;
      j++;
    }
    let body = "";
    let first = true;
    for (; j < g.length; j++) {
      const ch = g[j]!;
      if (ch === "]" && !first) break;
      first = false;
      if (ch === "\\" && j + 1 < g.length) {
        body += `\\${g[++j]}`;
      } else if (ch === "-" && body.length > 0 && g[j + 1] !== "]") {
        body += "-";
      } else {
        body += /[\\\]^[-]/.test(ch) ? `\\${ch}` : ch;
      }
    }
    if (j >= g.length) this.fail('unclosed "["');
    this.i = j + 1;
    return negate ? `[^/${body}]` : `[${body}]`;
  }
}

export interface GlobMatcher {
  (value: string): boolean;
  /** Instructions of the compiled program (what compiling and matching cost grows with). */
  readonly size: number;
}

/** A linear-time matcher for `glob`; throws GlobSyntaxError when it is malformed. */
export function compileGlob(glob: string, opts: { ignoreCase?: boolean } = {}): GlobMatcher {
  const { source, negated } = globToRe2(glob);
  let re: RE2JS;
  try {
    re = RE2JS.compile(source, RE2JS.DOTALL | (opts.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0));
  } catch (e) {
    throw new GlobSyntaxError(`invalid glob "${glob}": ${(e as Error).message.replace(/^error parsing regexp: /, "")}`);
  }
  const size = re.programSize();
  if (size > MAX_PROGRAM_SIZE)
    throw new GlobSyntaxError(
      `glob "${glob.length > 80 ? `${glob.slice(0, 77)}...` : glob}" compiles to ${size} instructions, more than the ${MAX_PROGRAM_SIZE} Steward runs`,
    );
  return Object.assign((value: string) => re.matches(value) !== negated, { size });
}
