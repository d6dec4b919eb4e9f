// Files shipped beside the code (package.json, app.yml) are found from the package root, not by a
// fixed number of `../`: the same module runs from src/ under tsx and from dist/src/ once built.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate) && (JSON.parse(readFileSync(candidate, "utf8")) as { name?: string }).name === "steward")
      return dir;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error("steward: cannot find its own package.json above " + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

let root: string | undefined;

/** Absolute path of a file relative to Steward's package root. */
export function packageFile(relative: string): string {
  root ??= findRoot();
  return join(root, relative);
}

/** Steward's version, from its package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(packageFile("package.json"), "utf8")) as { version: string }).version;
}
