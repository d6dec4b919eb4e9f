// The handler modules whose sections and documents make up Steward's policy: the built-in
// ones plus those named by STEWARD_HANDLERS, so `steward validate` and the steward/config
// check know exactly the sections the running service loads.
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { HandlerModule } from "../handler.js";

const cache = new Map<string, Promise<readonly HandlerModule<any>[]>>();

/** Built-in handlers plus the policy-declaring modules at `extraPaths` (resolved from the working directory). */
export function policyHandlers(extraPaths: readonly string[] = []): Promise<readonly HandlerModule<any>[]> {
  const paths = extraPaths.map((p) => p.trim()).filter((p) => p.length > 0);
  const key = paths.join(",");
  let pending = cache.get(key);
  if (!pending) {
    pending = load(paths);
    pending.catch(() => cache.delete(key));
    cache.set(key, pending);
  }
  return pending;
}

async function load(paths: string[]): Promise<readonly HandlerModule<any>[]> {
  // Imported lazily: handlers/index.ts imports modules that import this one.
  const { builtinHandlers } = await import("../../handlers/index.js");
  const extra: HandlerModule<any>[] = [];
  for (const raw of paths) {
    const mod = (await import(pathToFileURL(resolve(process.cwd(), raw)).href)) as { default?: unknown };
    let exported = mod.default;
    if (exported && typeof exported === "object" && "default" in exported && !("name" in exported)) exported = (exported as { default: unknown }).default;
    // Plain Probot app functions declare no policy: only handler modules matter here.
    if (exported && typeof exported === "object" && ("policy" in exported || "documents" in exported)) extra.push(exported as HandlerModule<any>);
  }
  return [...builtinHandlers, ...extra];
}

/** STEWARD_HANDLERS as a list of paths. */
export function handlerPathsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.STEWARD_HANDLERS ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
}
