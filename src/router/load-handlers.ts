// Loads extra handler modules named by STEWARD_HANDLERS. A module's default export is
// either a HandlerModule or a plain Probot app function `(app) => { app.on(...) }`.
import { existsSync } from "node:fs";
import { basename, extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ApplicationFunction } from "probot";
import type { Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import type { StewardConfig } from "../config/types.js";
import { probotAppAsHandler } from "./probot-app.js";

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

export async function loadHandlerModules(
  paths: string[],
  opts: { config: StewardConfig; logger: Logger },
): Promise<HandlerModule<any>[]> {
  const modules: HandlerModule<any>[] = [];
  for (const raw of paths.map((p) => p.trim()).filter((p) => p.length > 0)) {
    const path = resolve(process.cwd(), raw);
    if (!existsSync(path)) throw new Error(`handler module ${raw}: no such file (${path})`);
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (e) {
      throw new Error(`handler module ${raw}: could not be loaded: ${(e as Error).message}`);
    }
    const exported = defaultExport(mod);
    if (isHandlerModule(exported)) {
      modules.push(exported);
    } else if (typeof exported === "function") {
      const name = nameFromPath(path);
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
