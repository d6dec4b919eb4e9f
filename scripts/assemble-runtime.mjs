#!/usr/bin/env node
// `node scripts/assemble-runtime.mjs DEST`: lays out in DEST the tree the Dockerfile's runtime stage
// holds, from this checkout's build: package.json, package-lock.json, app.yml, bin/, cjs/, dist/
// and the production dependencies only (what `npm prune --omit=dev` keeps, as listed by
// `npm ls --omit=dev`). Keep the list of files in step with the Dockerfile's COPY lines.
// test/deploy/container.test.ts starts Steward from DEST as the image would run it.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const RUNTIME_FILES = ["package.json", "package-lock.json", "app.yml", "bin", "cjs", "dist"];

/** Absolute paths of the production packages installed under root/node_modules. */
function productionPackages(root) {
  const npm = spawnSync("npm", ["ls", "--omit=dev", "--all", "--parseable"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  // npm ls exits 1 for a tree that differs from the lockfile in some detail; the listing is still whole.
  if (!npm.stdout) throw new Error(`npm ls failed: ${npm.stderr}`);
  // Workspace links (the sandbox hub, a dev dependency npm ls lists anyway) are not packages to ship.
  return npm.stdout
    .split("\n")
    .filter((p) => p && p.startsWith(join(root, "node_modules") + sep) && !lstatSync(p).isSymbolicLink());
}

/** Newest modification time of a .ts file under root/src and root/handlers. */
function newestSource(root) {
  let newest = 0;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith(".ts")) newest = Math.max(newest, statSync(join(dir, e.name)).mtimeMs);
    }
  };
  for (const d of ["src", "handlers"]) if (existsSync(join(root, d))) walk(join(root, d));
  return newest;
}

/**
 * With `fresh` (tests in a working checkout), a dist/ older than a source is not copied: the
 * sources are compiled into DEST instead (the build stage's `npm run build`, there).
 */
export function assembleRuntime(root, dest, opts = {}) {
  const main = join(root, "dist", "src", "cli", "main.js");
  const stale = !existsSync(main) || (opts.fresh && statSync(main).mtimeMs < newestSource(root));
  if (stale && !opts.fresh) throw new Error("dist/ is missing: run `npm run build` first");
  mkdirSync(dest, { recursive: true });
  for (const file of RUNTIME_FILES)
    if (!(stale && file === "dist")) cpSync(join(root, file), join(dest, file), { recursive: true });
  if (stale) {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    const built = spawnSync(
      process.execPath,
      [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", join(dest, "dist")],
      { cwd: root, encoding: "utf8" },
    );
    if (built.status !== 0) throw new Error(`compiling dist/ failed: ${built.stdout}${built.stderr}`);
  }
  for (const pkg of productionPackages(root)) {
    const rel = relative(root, pkg);
    // Each package without its own node_modules: the production packages nested there are listed too.
    cpSync(pkg, join(dest, rel), {
      recursive: true,
      filter: (src) => !relative(pkg, src).split(sep).includes("node_modules"),
    });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dest = process.argv[2];
  if (!dest) {
    console.error("usage: node scripts/assemble-runtime.mjs DEST");
    process.exit(2);
  }
  assembleRuntime(resolve(fileURLToPath(new URL("..", import.meta.url))), resolve(dest));
}
