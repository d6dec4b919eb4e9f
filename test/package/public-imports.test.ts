// Handlers use only Steward's public entries (package.json `exports`): a deep import of a src/
// path from handlers/ fails here, naming the file and the import.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { exports: Record<string, unknown> };

/** Source file behind each public entry: ./dist/src/x.js -> src/x.ts. */
function publicSources(): Set<string> {
  const sources = new Set<string>();
  for (const target of Object.values(pkg.exports)) {
    if (typeof target !== "object" || target === null) continue;
    const js = (target as Record<string, string>).import;
    if (js) sources.add(js.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts"));
  }
  return sources;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** Every module specifier of static imports, re-exports and dynamic imports. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;"']*?\bfrom\s*["']([^"']+)["']/g))
    found.push(m[1]!);
  for (const m of source.matchAll(/(?:^|\n)\s*import\s*["']([^"']+)["']/g)) found.push(m[1]!);
  for (const m of source.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) found.push(m[1]!);
  return found;
}

/** Imports in handlers/ that reach into src/ other than through a public entry. */
function deepImports(files: { path: string; source: string }[]): string[] {
  const allowed = publicSources();
  const bad: string[] = [];
  for (const { path: file, source } of files) {
    for (const spec of specifiers(source)) {
      if (!spec.startsWith(".")) continue;
      const target = relative(root, resolve(dirname(file), spec)).replace(/\.js$/, ".ts");
      if (target.startsWith("handlers/")) continue;
      if (!allowed.has(target)) bad.push(`${relative(root, file)}: ${spec}`);
    }
  }
  return bad;
}

describe("handlers import only the public API", () => {
  it("the public entries are src/index.ts, src/policy/index.ts and src/testing.ts", () => {
    expect([...publicSources()].sort()).toEqual(["src/index.ts", "src/policy/index.ts", "src/testing.ts"]);
  });

  it("no handler file imports a src/ path other than a public entry", () => {
    const files = tsFiles(join(root, "handlers"));
    expect(files.length).toBeGreaterThan(20);
    expect(deepImports(files.map((path) => ({ path, source: readFileSync(path, "utf8") })))).toEqual([]);
  });

  it("a deep import is caught (the check can fail)", () => {
    const source = [
      'import { defineHandler } from "../../src/index.js";',
      'import type { Store } from "../../src/store/types.js";',
      'export { x } from "../../src/policy/merge.js";',
      'const later = () => import("../../src/engine.js");',
    ].join("\n");
    const path = join(root, "handlers", "probe", "index.ts");
    expect(deepImports([{ path, source }])).toEqual([
      "handlers/probe/index.ts: ../../src/store/types.js",
      "handlers/probe/index.ts: ../../src/policy/merge.js",
      "handlers/probe/index.ts: ../../src/engine.js",
    ]);
  });
});
