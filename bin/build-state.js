// Whether a checkout's compiled output (dist/ and the sandbox hub's packages/sandbox-hub/dist/) is
// missing or older than one of its TypeScript sources: `bin/steward.js` then runs the sources, and
// the bench builds before measuring, so what runs is always what was last edited. In an installed
// package there are no sources, so the output is never stale.
import { existsSync, readdirSync, statSync } from "node:fs";

/** Newest modification time of a .ts file under these folders (0 when none). */
function newestSource(dirs) {
  let newest = 0;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = new URL(entry.name + (entry.isDirectory() ? "/" : ""), dir);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of dirs) if (existsSync(dir)) walk(dir);
  return newest;
}

const builtAt = (file) => (existsSync(file) ? statSync(file).mtimeMs : 0);

/**
 * True when `output` (a file of dist/) or the hub's build is missing or older than a source file.
 * @param {URL} root the checkout's root folder
 * @param {URL} output the compiled file that stands for dist/
 */
export function compiledIsStale(root, output) {
  if (newestSource([new URL("src/", root), new URL("handlers/", root)]) > builtAt(output)) return true;
  const hub = new URL("packages/sandbox-hub/", root);
  const hubSources = new URL("src/", hub);
  return existsSync(hubSources) && newestSource([hubSources]) > builtAt(new URL("dist/index.js", hub));
}
