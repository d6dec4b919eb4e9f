// `npm run build`: compiles src/ and handlers/ to dist/ (tsconfig.build.json), from a clean dist/.
// `--if-available` (the `prepare` script, run by `npm ci` / `npm install`) skips quietly when the
// TypeScript compiler is not installed (`npm ci --omit=dev`), so a production install never fails here.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  if (process.argv.includes("--if-available")) {
    console.error("steward: typescript is not installed; dist/ not built (run `npm run build` with dev dependencies)");
    process.exit(0);
  }
  console.error("steward: cannot build: the typescript package is not installed (npm install --include=dev)");
  process.exit(1);
}
rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
process.exit(result.status ?? 1);
