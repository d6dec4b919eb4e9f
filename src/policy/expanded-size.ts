// YAML aliases let a small file stand for a huge value (`a: &a [*b, *b, ...]` nested: a billion
// laughs). Counting aliases would reject ordinary files that reuse a plain value a hundred times, so
// the bound is on what matters: the number of values the document expands to.
import { isAlias, isCollection, isPair, isScalar, type Document, type Node } from "yaml";

/** Most values (scalars, list items, map entries) a policy document may have, counting what aliases expand to. */
export const MAX_EXPANDED_VALUES = 20_000;

export interface ExpansionProblem {
  /** Offset in the source text of the alias that went over the bound or refers to its own ancestor. */
  offset: number;
  message: string;
}

/**
 * Counts the values `doc` expands to, memoised per node so the count itself is linear in the file.
 * Returns a problem when the expansion exceeds `max` or an alias refers to a node containing it.
 */
export function checkExpandedSize(doc: Document, max = MAX_EXPANDED_VALUES): ExpansionProblem | undefined {
  const sizes = new Map<unknown, number>();
  const open = new Set<unknown>();
  let problem: ExpansionProblem | undefined;
  let aliases = false;

  const size = (node: unknown): number => {
    if (problem || node === null || node === undefined) return 0;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    let n = 1;
    if (isAlias(node)) {
      aliases = true;
      const target = node.resolve(doc);
      const offset = node.range?.[0] ?? 0;
      if (open.has(target)) {
        problem = { offset, message: `alias *${node.source} refers to a value that contains it` };
        return 0;
      }
      n = size(target);
      if (!problem && n > max)
        problem = { offset, message: `the document expands to more than ${max} values through aliases` };
    } else if (isScalar(node)) {
      n = 1;
    } else if (isPair(node)) {
      open.add(node);
      n = size(node.key) + size(node.value);
      open.delete(node);
    } else if (isCollection(node)) {
      open.add(node);
      for (const item of node.items) {
        n += size(item);
        if (n > max) break;
      }
      open.delete(node);
    }
    sizes.set(node, n);
    if (!problem && n > max)
      problem = {
        offset: (node as Node).range?.[0] ?? 0,
        message: aliases
          ? `the document expands to more than ${max} values through aliases`
          : `the document has more than ${max} values`,
      };
    return n;
  };
  size(doc.contents);
  return problem;
}
