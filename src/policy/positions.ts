// Maps a JSON path inside a parsed YAML document back to a line and column, so every
// problem can point at the exact key or value it is about.
import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from "yaml";

export interface SourcePosition {
  line: number;
  column: number;
  /** Column just past the node when it ends on the same line. */
  endColumn?: number;
}

export type PathSegment = string | number;

/** Resolve `path` to a node's position; missing segments stop at the deepest node that exists. */
export function locatePath(
  doc: Document | undefined,
  lineCounter: LineCounter,
  path: readonly PathSegment[],
  opts: { key?: boolean } = {},
): SourcePosition & { exact: boolean } {
  let node: unknown = doc?.contents ?? null;
  let exact = true;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    let next: unknown;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && keyText(p.key) === String(segment));
      if (!pair) {
        exact = false;
        break;
      }
      if (i === path.length - 1 && opts.key) {
        node = pair.key;
        break;
      }
      // `key:` with nothing after it has no value node: point at the key.
      next = pair.value ?? pair.key;
    } else if (isSeq(node) && typeof segment === "number" && segment < node.items.length) {
      next = node.items[segment];
    } else {
      exact = false;
      break;
    }
    node = next;
  }
  return { ...rangePosition(node, lineCounter), exact };
}

function keyText(key: unknown): string {
  if (isScalar(key)) return String(key.value);
  return String(key);
}

function rangePosition(node: unknown, lineCounter: LineCounter): SourcePosition {
  const range = (node as Node | null)?.range;
  if (!range) return { line: 1, column: 1 };
  return offsetRange(lineCounter, range[0], range[1]);
}

/** Position of `start`, with an end column when `end` is on the same line. */
export function offsetRange(lineCounter: LineCounter, start: number, end: number): SourcePosition {
  const from = lineCounter.linePos(start);
  const to = lineCounter.linePos(Math.max(start, end));
  const pos: SourcePosition = { line: from.line, column: from.col };
  if (to.line === from.line && to.col > from.col) pos.endColumn = to.col;
  return pos;
}
