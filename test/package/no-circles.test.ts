// No import circles among Steward's own modules (src/ and handlers/): a circle means two parts
// that cannot be understood, loaded or tested apart, and the lazy `import()` that usually hides
// one is still a dependency. A failure names each circle, file by file.
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { circles, importGraph } from "./import-graph.js";

const root = resolve(import.meta.dirname, "../..");
const scratch: string[] = [];
afterAll(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-circles-"));
  scratch.push(dir);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, ".."), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

describe("import circles", () => {
  it("src/ and handlers/ have none", () => {
    const graph = importGraph(root, ["src", "handlers"]);
    expect(graph.size).toBeGreaterThan(200);
    // The graph really holds the edges it is about: handlers reach the framework through its public entry.
    expect(graph.get("handlers/index.ts")).toContain("handlers/checks/index.ts");
    expect(graph.get("handlers/checks/index.ts")).toContain("src/index.ts");
    expect(circles(graph)).toEqual([]);
  });

  it("finds and names a circle of type-only imports, re-exports and lazy imports", async () => {
    const dir = await tree({
      "src/handler.ts":
        'import type { Section } from "./policy/types.js";\nexport type Handler = { section: Section };\n',
      "src/policy/types.ts": 'export type Section = { loader: import("../handler.js").Handler };\n',
      "src/a.ts": 'export { b } from "./b.js";\nexport const a = 1;\n',
      "src/b.ts": 'export const b = async () => (await import("./c.js")).c;\n',
      "src/c.ts": 'import { a } from "./a.js";\nexport const c = a;\n',
      "src/self.ts": 'import "./self.js";\n',
      "handlers/index.ts": 'import { a } from "../src/a.js";\nexport const all = [a];\n',
    });
    expect(circles(importGraph(dir, ["src", "handlers"]))).toEqual([
      "src/a.ts -> src/b.ts -> src/c.ts -> src/a.ts",
      "src/handler.ts -> src/policy/types.ts -> src/handler.ts",
      "src/self.ts -> src/self.ts",
    ]);
  });

  it("a tree without circles has none, however its files share imports", async () => {
    const dir = await tree({
      "src/a.ts": 'import { b } from "./b.js";\nimport { c } from "./c.js";\nexport const a = b + c;\n',
      "src/b.ts": 'import { c } from "./c.js";\nexport const b = c;\n',
      "src/c.ts": "export const c = 1;\n",
    });
    const graph = importGraph(dir, ["src"]);
    expect(graph.get("src/a.ts")).toEqual(["src/b.ts", "src/c.ts"]);
    expect(circles(graph)).toEqual([]);
  });
});
