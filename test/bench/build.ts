// The bench measures Steward as production runs it: the compiled JavaScript in dist/. Before a
// section that starts the compiled server (or the compiled sandbox hub), dist/ is rebuilt (`npm run build`) when any source
// file is newer than it, so a bench never measures stale code.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path));
    else if (entry.name.endsWith(".ts")) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

export function ensureCompiled(log: (s: string) => void): void {
  const marker = join(root, "dist/src/app.js");
  const sources = Math.max(newest(join(root, "src")), newest(join(root, "handlers")), newest(join(root, "packages/sandbox-hub/src")));
  if (existsSync(marker) && statSync(marker).mtimeMs >= sources) return;
  log("dist/ is older than src/: npm run build");
  const result = spawnSync(process.execPath, [join(root, "scripts/build.mjs")], { cwd: root, stdio: "inherit" });
  if (result.status !== 0) throw new Error("npm run build failed; the bench measures the compiled service");
}
