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
import type { Containment } from "./containment.js";
import { runHosted } from "./hosted-scope.js";
import { safeErrorMessage } from "../log/redact.js";
import { configSecrets } from "../engine/run.js";
import { legacyCalls, LegacyOctokitError } from "./legacy-octokit.js";

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
  if (typeof d === "object" && d !== null && "default" in d && !isHandlerModule(d))
    return (d as { default: unknown }).default;
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
      throw new Error(
        `handler module ${raw}: a TypeScript module needs tsx installed (npm install --save-dev tsx), or compile it to JavaScript`,
      );
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

/**
 * Modules (absolute paths) this process's service disabled because they could not load: the
 * steward/config check validates what the service loads, so it leaves them out too, instead of
 * failing every pull request on them.
 */
const disabledPaths = new Set<string>();

/** Longest a module may take to load (its import and a Probot app's function) in a service that contains them. */
export const LOAD_TIMEOUT_MS = 30_000;

/** The module at `raw`, a Probot app wrapped as a handler; what is neither throws, naming it. */
async function loadOne(raw: string, opts: { config: StewardConfig; logger: Logger }): Promise<HandlerModule<any>> {
  const { path, exported } = await importModule(raw);
  if (isHandlerModule(exported)) {
    // Routing calls it on every delivery of its events: a wrong type is refused here, by name, not per delivery.
    if (exported.takes !== undefined && typeof exported.takes !== "function") {
      throw new Error(
        `handler module ${raw}: \`takes\` must be a function (delivery, config) => boolean, not ${typeof exported.takes}`,
      );
    }
    return exported;
  }
  if (typeof exported === "function") {
    // Probot (and express, for the app's routes) is loaded only for a service that hosts a Probot app.
    const { probotAppAsHandler } = await import("./probot-app.js");
    return probotAppAsHandler(exported as ApplicationFunction, {
      name: nameFromPath(path),
      config: opts.config,
      logger: opts.logger,
    });
  }
  throw new Error(
    `handler module ${raw}: its default export is neither a handler module ({ name, events, handle }) nor a Probot app function`,
  );
}

function withinLoadTime<T>(raw: string, work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`handler module ${raw}: did not finish loading within ${ms / 1000} s`)),
      ms,
    );
    timer.unref();
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * Every module at `paths`, Probot apps wrapped as handlers. Alone, a path that cannot be loaded
 * throws, naming it. With `containment` (the service), each module loads in its own hosted scope
 * (what it leaves running is attributed to it) within LOAD_TIMEOUT_MS, and one that throws,
 * rejects or overruns is disabled with one line naming it and why: the others and the service go on.
 */
export async function loadHandlerModules(
  paths: readonly string[],
  opts: { config: StewardConfig; logger: Logger; containment?: Containment; loadTimeoutMs?: number },
): Promise<HandlerModule<any>[]> {
  const modules: HandlerModule<any>[] = [];
  // Before any module runs: calls to Octokit 15/16 names are refused together, each named, and the
  // service does not start (the same module would fail at its first delivery, not at start).
  if (opts.config.octokitCheck !== "off") {
    const old = listed(paths)
      .map((raw) => resolve(process.cwd(), raw))
      .filter((path) => existsSync(path))
      .flatMap((path) => legacyCalls(path));
    if (old.length > 0) throw new LegacyOctokitError(old);
  }
  for (const raw of listed(paths)) {
    let module: HandlerModule<any>;
    if (opts.containment) {
      const name = nameFromPath(resolve(process.cwd(), raw));
      const loading = runHosted(opts.containment.scope(name, "loading"), () => loadOne(raw, opts));
      // Settled either way: a load that rejects after its time ran out is not an unhandled rejection.
      loading.catch(() => undefined);
      try {
        module = await withinLoadTime(raw, loading, opts.loadTimeoutMs ?? LOAD_TIMEOUT_MS);
      } catch (e) {
        disabledPaths.add(resolve(process.cwd(), raw));
        opts.logger.error(
          { path: raw, handler: name, error: safeErrorMessage(e, configSecrets(opts.config)) },
          `handler module ${name} disabled: it could not be loaded; Steward serves without it`,
        );
        continue;
      }
    } else {
      module = await loadOne(raw, opts);
    }
    modules.push(module);
    opts.logger.info({ path: raw, handler: module.name }, "handler module loaded");
  }
  return modules;
}

const policyCache = new Map<string, Promise<readonly HandlerModule<any>[]>>();

/**
 * The modules at `paths` that declare policy (a section or documents), loaded once per list;
 * those the service in this process disabled are left out.
 * Probot app functions declare none and are not started here: validating a policy file runs
 * no app.
 */
export function policyModules(paths: readonly string[] = []): Promise<readonly HandlerModule<any>[]> {
  const wanted = listed(paths).filter((p) => !disabledPaths.has(resolve(process.cwd(), p)));
  const key = wanted.join(",");
  let pending = policyCache.get(key);
  if (!pending) {
    pending = (async () => {
      const modules: HandlerModule<any>[] = [];
      for (const raw of wanted) {
        const { exported } = await importModule(raw);
        if (exported && typeof exported === "object" && ("policy" in exported || "documents" in exported))
          modules.push(exported as HandlerModule<any>);
      }
      return modules;
    })();
    pending.catch(() => policyCache.delete(key));
    policyCache.set(key, pending);
  }
  return pending;
}
