// The import graph of Steward's own TypeScript files, built with the TypeScript compiler: every
// static import and re-export, type-only ones included, and every `import("...")` with a literal
// specifier (a lazy import is still a dependency). Used by no-circles.test.ts.
import { readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

export type ImportGraph = Map<string, string[]>;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? tsFiles(join(dir, e.name))
      : e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")
        ? [join(dir, e.name)]
        : [],
  );
}

/** Files under `folders` of `root` (paths relative to `root`), each with the files among them it imports. */
export function importGraph(root: string, folders: readonly string[]): ImportGraph {
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowJs: false,
  };
  const files = folders.flatMap((f) => tsFiles(resolve(root, f)));
  const known = new Set(files);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const text = ts.sys.readFile(file) ?? "";
    const { importedFiles } = ts.preProcessFile(text, true, true);
    const targets = new Set<string>();
    for (const { fileName } of importedFiles) {
      const resolved = ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule?.resolvedFileName;
      if (resolved && known.has(resolve(resolved))) targets.add(relative(root, resolve(resolved)));
    }
    graph.set(relative(root, file), [...targets].sort());
  }
  return graph;
}

/** One circle per strongly connected part of the graph, as `a -> b -> a`, shortest through its first file. */
export function circles(graph: ImportGraph): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const parts: string[][] = [];
  let next = 0;
  // Iterative Tarjan: the graph is a few hundred files, but recursion depth should not depend on it.
  for (const start of [...graph.keys()].sort()) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const edges = graph.get(top.node) ?? [];
      if (top.edge < edges.length) {
        const to = edges[top.edge++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(top.node)!));
      if (low.get(top.node) === index.get(top.node)) {
        const part: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          part.push(member);
        } while (member !== top.node);
        if (part.length > 1 || (graph.get(top.node) ?? []).includes(top.node)) parts.push(part.sort());
      }
    }
  }
  return parts.map((part) => shortestCircle(graph, part)).sort();
}

/** The shortest way from the part's first file back to itself, staying inside the part. */
function shortestCircle(graph: ImportGraph, part: string[]): string {
  const inPart = new Set(part);
  const first = part[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [first];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of graph.get(node) ?? []) {
      if (!inPart.has(to)) continue;
      if (to === first) {
        const path = [first];
        for (let at: string | undefined = node; at !== undefined && at !== first; at = cameFrom.get(at))
          path.splice(1, 0, at);
        return [...path, first].join(" -> ");
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return part.join(" -> ");
}
