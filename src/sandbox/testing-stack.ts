// What `steward/testing`'s startSandboxStack runs: exactly the handlers or apps a test names (the
// built-in handlers only when asked), the app installed in the hub with the grant of the app's own
// app.yml, so a test from an app's package sees what its registered app would be allowed.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { HandlerModule } from "../handler.js";
import { enabledBuiltins } from "../app.js";
import { readAppManifest, unionGrant, type Permissions } from "../modules/app-manifest.js";
import { STEWARD_APP, sandboxGrant, type CreateHubOptions } from "./hub.js";
import { startSandboxStack, type SandboxStack, type SandboxStackOptions } from "./stack.js";

export interface TestingStackOptions extends Omit<SandboxStackOptions, "handlers"> {
  /** Handler modules (objects) to run, and nothing else unless `builtins` says so. */
  handlers?: HandlerModule<any>[];
  /** Paths of Probot apps or handler modules, loaded as STEWARD_HANDLERS loads them. */
  apps?: string[];
  /** Built-in handlers beside them: "none" (the default with `handlers` or `apps`), "all", or names. */
  builtins?: "all" | "none" | string[];
  /** An app.yml the app is installed with; with `handlers`, ./app.yml (the working directory's) by default. */
  manifest?: string;
}

/**
 * The grant: each app path's own app.yml, plus `manifest` (with handler objects only, ./app.yml
 * by default); Steward's own app.yml when none of these exists, or when the built-in handlers run.
 */
export function testingGrant(opts: {
  apps: readonly string[];
  builtins: "all" | "none" | string[];
  manifest?: string | undefined;
}): NonNullable<CreateHubOptions["app"]> {
  // Handler objects have no path to find their package by: the test runs from the package's root.
  const fromCwd = opts.apps.length === 0 && existsSync(resolve("app.yml")) ? resolve("app.yml") : undefined;
  const manifest = opts.manifest ?? fromCwd;
  let grant: { events: string[]; permissions: Permissions } = sandboxGrant({
    builtins: opts.builtins,
    modulePaths: opts.apps,
  }) as { events: string[]; permissions: Permissions };
  const own = manifest ? readAppManifest(resolve(manifest)) : undefined;
  if (own) grant = unionGrant(grant, own);
  else if (grant.events.length === 0) grant = unionGrant(grant, STEWARD_APP as typeof grant);
  return grant as NonNullable<CreateHubOptions["app"]>;
}

export async function startTestingStack(opts: TestingStackOptions = {}): Promise<SandboxStack> {
  const { handlers, apps, builtins: asked, manifest, ...rest } = opts;
  if (handlers && apps)
    throw new Error("steward/testing: give either `handlers` (modules) or `apps` (paths), not both");
  if (!handlers && !apps)
    return startSandboxStack({ ...rest, ...(asked ? { env: builtinsEnv(asked, rest.env) } : {}) });
  const builtins = asked ?? "none";
  const app = rest.hub?.app ?? testingGrant({ apps: apps ?? [], builtins, manifest });
  const hub = { ...rest.hub, app };
  if (handlers) return startSandboxStack({ ...rest, hub, handlers: [...enabledBuiltins(builtins), ...handlers] });
  return startSandboxStack({
    ...rest,
    hub,
    env: { ...builtinsEnv(builtins, rest.env), STEWARD_HANDLERS: apps!.map((p) => resolve(p)).join(",") },
  });
}

function builtinsEnv(builtins: "all" | "none" | string[], env: Record<string, string> = {}): Record<string, string> {
  return { ...env, STEWARD_BUILTIN_HANDLERS: Array.isArray(builtins) ? builtins.join(",") : builtins };
}
