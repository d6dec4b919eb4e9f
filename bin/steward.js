#!/usr/bin/env node
// Runs the compiled output (dist/ and the sandbox hub's packages/sandbox-hub/dist/, built by
// `npm run build` and by `npm pack` through `prepack`). In a development checkout where either is
// missing or older than a source file, it runs the sources through tsx instead (a dev dependency),
// the hub's too (the "steward-source" export condition), so what runs is always what was last edited;
// STEWARD_FROM_SOURCE=1 forces that. Without dist/ and without tsx it says how to build.
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";

const root = new URL("../", import.meta.url);
const compiled = new URL("dist/src/cli/main.js", root);
const hub = new URL("packages/sandbox-hub/", root);

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

function tsxAvailable() {
  try {
    createRequire(import.meta.url).resolve("tsx/esm/api");
    return true;
  } catch {
    return false;
  }
}

function useSources() {
  if (!tsxAvailable()) return false;
  if (process.env.STEWARD_FROM_SOURCE === "1" || !existsSync(compiled)) return true;
  const built = statSync(compiled).mtimeMs;
  if (newestSource([new URL("src/", root), new URL("handlers/", root)]) > built) return true;
  const hubSources = new URL("src/", hub);
  if (!existsSync(hubSources)) return false;
  const hubBuilt = new URL("dist/index.js", hub);
  return !existsSync(hubBuilt) || newestSource([hubSources]) > statSync(hubBuilt).mtimeMs;
}

const SOURCE_CONDITION = `export function resolve(specifier, context, next) {
  return next(specifier, { ...context, conditions: [...context.conditions, "steward-source"] });
}`;

let main;
if (useSources()) {
  const { register } = await import("tsx/esm/api");
  register();
  // Resolve workspace packages to their TypeScript sources (their "steward-source" export), as tests do.
  const { register: registerLoader } = await import("node:module");
  registerLoader(`data:text/javascript,${encodeURIComponent(SOURCE_CONDITION)}`);
  ({ main } = await import("../src/cli/main.ts"));
} else if (existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  process.stderr.write("steward: dist/ is missing: run `npm run build` (needs the dev dependencies) and start again\n");
  process.exit(1);
}
process.exitCode = await main(process.argv.slice(2));
