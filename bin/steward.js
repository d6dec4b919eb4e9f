#!/usr/bin/env node
// Runs the compiled output (dist/ and the sandbox hub's packages/sandbox-hub/dist/, built by
// `npm run build` and by `npm pack` through `prepack`). In a development checkout where either is
// missing or older than a source file, it runs the sources through tsx instead (a dev dependency),
// the hub's too (the "steward-source" export condition), so what runs is always what was last edited;
// STEWARD_FROM_SOURCE=1 forces that. Without dist/ and without tsx it says how to build.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { compiledIsStale } from "./build-state.js";

const root = new URL("../", import.meta.url);
const compiled = new URL("dist/src/cli/main.js", root);

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
  return process.env.STEWARD_FROM_SOURCE === "1" || !existsSync(compiled) || compiledIsStale(root, compiled);
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
