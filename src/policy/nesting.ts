// How deeply a YAML text nests, read with the library's own lexer and CST parser: both keep their
// state in explicit stacks, so this pass is linear whatever the input. Building the document is
// recursive, and a text of 100,000 `[` would spend a second on the event loop before failing
// with a stack overflow; a text nested deeper than any policy needs is refused first.
import { Lexer, Parser } from "yaml";

/** Deepest nesting of collections a policy file may have (a policy needs about ten). */
export const MAX_NESTING = 64;

/** The offset where `text` first nests deeper than `max` levels, or undefined. */
export function tooDeep(text: string, max = MAX_NESTING): number | undefined {
  const parser = new Parser();
  for (const lexeme of new Lexer().lex(text)) {
    // The CST parser holds one stack entry per open collection (and one for the document).
    for (const _ of parser.next(lexeme)) void _;
    if (parser.stack.length > max + 1) return parser.offset;
  }
  return undefined;
}
