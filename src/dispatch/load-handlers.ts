// The one loader of the handler modules named by STEWARD_HANDLERS. A module's default export is
// either a HandlerModule or a plain Probot app function `(app) => { app.on(...) }`. The service
// loads every module (`loadHandlerModules`); `steward validate` and the steward/config check load
// those that declare policy (`policyModules`), so both know exactly the sections the service
// loads. The built-in modules are added by their callers (`handlers/index.ts` owns that list):
// this module never imports handlers/.
import { existsSync } from "node:fs";
import { basename, extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ApplicationFunction } from "probot";
import type { Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import type { StewardConfig } from "../config/types.js";

function isHandlerModule(value: unknown): value is HandlerModule<any> {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  return (
    typeof m.name === "string" &&
    m.name.length > 0 &&
    Array.isArray(m.events) &&
    m.events.every((e) => typeof e === "string") &&
    typeof m.handle === "function"
  );
}

/** The default export, looking through one level of CommonJS interop (`module.exports = fn`). */
function defaultExport(mod: Record<string, unknown>): unknown {
  const d = mod.default;
  if (typeof d === "object" && d !== null && "default" in d && !isHandlerModule(d)) return (d as { default: unknown }).default;
  return d;
}

function nameFromPath(path: string): string {
  const file = basename(path, extname(path));
  return file === "index" ? basename(resolve(path, "..")) : file;
}

let typeScriptLoader: Promise<void> | undefined;

/**
 * A TypeScript handler module (`STEWARD_HANDLERS=./my-handler.ts`, a development setup) needs tsx's
 * loader when Steward itself runs compiled; from the sources it is already there. tsx is a
 * development dependency: without it the module cannot load, and the error says what to do.
 */
function loadTypeScript(raw: string): Promise<void> {
  if (import.meta.url.endsWith(".ts")) return Promise.resolve();
  typeScriptLoader ??= import("tsx/esm/api").then(
    (tsx) => void tsx.register(),
    () => {
      typeScriptLoader = undefined;
      throw new Error(`handler module ${raw}: a TypeScript module needs tsx installed (npm install --save-dev tsx), or compile it to JavaScript`);
    },
  );
  return typeScriptLoader;
}

const listed = (paths: readonly string[]) => paths.map((p) => p.trim()).filter((p) => p.length > 0);

/** Imports the module at `raw` (resolved from the working directory): its absolute path and default export. */
async function importModule(raw: string): Promise<{ path: string; exported: unknown }> {
  const path = resolve(process.cwd(), raw);
  if (!existsSync(path)) throw new Error(`handler module ${raw}: no such file (${path})`);
  try {
    if (/\.[cm]?ts$/.test(path)) await loadTypeScript(raw);
    return { path, exported: defaultExport((await import(pathToFileURL(path).href)) as Record<string, unknown>) };
  } catch (e) {
    throw new Error(`handler module ${raw}: could not be loaded: ${(e as Error).message}`);
  }
}

/** Every module at `paths`, Probot apps wrapped as handlers; a path that is neither throws, naming it. */
export async function loadHandlerModules(
  paths: readonly string[],
  opts: { config: StewardConfig; logger: Logger },
): Promise<HandlerModule<any>[]> {
  const modules: HandlerModule<any>[] = [];
  for (const raw of listed(paths)) {
    const { path, exported } = await importModule(raw);
    if (isHandlerModule(exported)) {
      // Routing calls it on every delivery of its events: a wrong type is refused here, by name, not per delivery.
      if (exported.takes !== undefined && typeof exported.takes !== "function") {
        throw new Error(`handler module ${raw}: \`takes\` must be a function (delivery, config) => boolean, not ${typeof exported.takes}`);
      }
      modules.push(exported);
    } else if (typeof exported === "function") {
      const name = nameFromPath(path);
      // Probot (and express, for the app's routes) is loaded only for a service that hosts a Probot app.
      const { probotAppAsHandler } = await import("./probot-app.js");
      modules.push(await probotAppAsHandler(exported as ApplicationFunction, { name, config: opts.config, logger: opts.logger }));
    } else {
      throw new Error(
        `handler module ${raw}: its default export is neither a handler module ({ name, events, handle }) nor a Probot app function`,
      );
    }
    opts.logger.info({ path: raw, handler: modules[modules.length - 1]!.name }, "handler module loaded");
  }
  return modules;
}

const policyCache = new Map<string, Promise<readonly HandlerModule<any>[]>>();

/**
 * The modules at `paths` that declare policy (a section or documents), loaded once per list.
 * Probot app functions declare none and are not started here: validating a policy file runs
 * no app.
 */
export function policyModules(paths: readonly string[] = []): Promise<readonly HandlerModule<any>[]> {
  const wanted = listed(paths);
  const key = wanted.join(",");
  let pending = policyCache.get(key);
  if (!pending) {
    pending = (async () => {
      const modules: HandlerModule<any>[] = [];
      for (const raw of wanted) {
        const { exported } = await importModule(raw);
        if (exported && typeof exported === "object" && ("policy" in exported || "documents" in exported)) modules.push(exported as HandlerModule<any>);
      }
      return modules;
    })();
    pending.catch(() => policyCache.delete(key));
    policyCache.set(key, pending);
  }
  return pending;
}
