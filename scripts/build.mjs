// `npm run build`: compiles the sandbox hub (packages/sandbox-hub, to its own dist/) and then
// Steward's src/ and handlers/ (to dist/, tsconfig.build.json), each from a clean dist/. The hub
// comes first because Steward's sandbox stack and demo compile against its declarations.
// `npm pack` runs it first (`prepack`); nothing runs it on install, so installing Steward from a
// path or a tarball never rebuilds a checkout. `--if-available` skips quietly when the TypeScript
// compiler is not installed (`npm ci --omit=dev`), for scripts that build only when they can.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

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

/** Projects in build order; a checkout without the hub's folder (a packed install) builds Steward alone. */
const projects = [new URL("../packages/sandbox-hub/", import.meta.url), new URL("../", import.meta.url)].filter((dir) =>
  existsSync(new URL("tsconfig.build.json", dir)),
);
for (const dir of projects) {
  rmSync(new URL("dist", dir), { recursive: true, force: true });
  const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
    cwd: fileURLToPath(dir),
    stdio: "inherit",
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
