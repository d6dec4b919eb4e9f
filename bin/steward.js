#!/usr/bin/env node
// Runs the compiled output (dist/, built by `npm run build` and by `npm ci` through `prepare`).
// In a development checkout where dist/ is missing or older than a source file, it runs the
// sources through tsx instead (a dev dependency), so what runs is always what was last edited;
// STEWARD_FROM_SOURCE=1 forces that. Without dist/ and without tsx it says how to build.
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";

const root = new URL("../", import.meta.url);
const compiled = new URL("dist/src/cli/main.js", root);

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
  if (startsSandbox(process.argv.slice(2))) return true;
  return newestSource([new URL("src/", root), new URL("handlers/", root)]) > statSync(compiled).mtimeMs;
}

/**
 * The sandbox hub (packages/sandbox-hub) is a development tool shipped as TypeScript and not part of
 * the compiled service: the commands that start it run from the sources (tsx is a dev dependency,
 * present wherever the hub is). A production install has neither and says so.
 */
function startsSandbox(args) {
  const [command] = args;
  return command === "sandbox" || command === "demo" || ((command === "start" || command === "receive") && !process.env.APP_ID);
}

let main;
if (useSources()) {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../src/cli/main.ts"));
} else if (existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  process.stderr.write("steward: dist/ is missing: run `npm run build` (needs the dev dependencies) and start again\n");
  process.exit(1);
}
process.exitCode = await main(process.argv.slice(2));
