// How deeply a YAML text nests, read with the library's own lexer and CST parser: both keep their
// state in explicit stacks, so this pass is linear whatever the input. Building the document is
// recursive, and a text of 100,000 `[` would spend a second on the event loop before failing
// with a stack overflow; a text nested deeper than any policy needs is refused first.
import { CST, Lexer, Parser } from "yaml";

/** Deepest nesting of collections a policy file may have (a policy needs about ten). */
export const MAX_NESTING = 64;
/**
 * Aliases (`*name`) a policy file may use. Building the document looks each alias's anchor up
 * by walking what came before it, so the cost grows with the square of their number: 3,000
 * aliases in 29 KB held the event loop 3 s. A policy reuses a list a handful of times.
 */
export const MAX_ALIASES = 100;

const VALUE_TOKENS = new Set(["scalar", "single-quoted-scalar", "double-quoted-scalar", "block-scalar", "alias"]);

/**
 * Where `text` first nests deeper than `maxDepth` levels or holds more than `maxValues` written
 * values (what aliases expand to is counted later, on the document), or undefined.
 */
export function shapeProblem(
  text: string,
  maxDepth = MAX_NESTING,
  maxValues = Infinity,
  maxAliases = MAX_ALIASES,
): { offset: number; message: string } | undefined {
  const parser = new Parser();
  let values = 0;
  let aliases = 0;
  for (const lexeme of new Lexer().lex(text)) {
    // The CST parser holds one stack entry per open collection (and one for the document).
    for (const _ of parser.next(lexeme)) void _;
    if (parser.stack.length > maxDepth + 1)
      return { offset: parser.offset, message: `the document nests deeper than ${maxDepth} levels` };
    const type = CST.tokenType(lexeme) ?? "";
    if (VALUE_TOKENS.has(type) && ++values > maxValues)
      return { offset: parser.offset, message: `the document has more than ${maxValues} values` };
    // At the alias itself: the parser's offset is past the token by now.
    if (type === "alias" && ++aliases > maxAliases)
      return {
        offset: parser.offset - lexeme.length,
        message: `the document uses more than ${maxAliases} aliases (*name); write the values out or use fewer`,
      };
  }
  return undefined;
}
