// `steward register [--port P] [--org ORG] [--app-yml FILE] [--env-file FILE] [--webhook-url URL]`:
// GitHub's App Manifest flow. Serves a page on 127.0.0.1 that posts app.yml as a manifest to
// GitHub, exchanges the code GitHub returns, and writes the app's credentials to .env.
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { parse, stringify } from "yaml";
import { AppManifestError, appManifestOf, type AppManifest } from "../../modules/app-manifest.js";
import { manifestFromAppYml } from "../register/manifest.js";
import { startRegistration } from "../register/flow.js";
import { loadHandlerPaths } from "../../config/env.js";
import {
  appNeeds,
  consoleCallbackUrl,
  declaredModules,
  parseNeedsFlag,
  selectBuiltins,
  unionNeeds,
  withNeeds,
  type AppNeeds,
  type PermissionSet,
} from "../register/least-privilege.js";

export const usage = `usage: steward register [--port P] [--org ORG] [--app-yml FILE] [--env-file FILE] [--webhook-url URL]
                        [--handlers LIST] [--permission NAME=LEVEL]... [--event NAME]... [--console-url URL] [APP...]
  registers Steward as a GitHub App from app.yml (GitHub's App Manifest flow): open the page it
  serves on http://127.0.0.1:P (default 3000), confirm on GitHub, and APP_ID, PRIVATE_KEY,
  WEBHOOK_SECRET, GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are written to .env (mode 0600,
  other lines kept). --org registers it under an organisation. Deliveries go to --webhook-url,
  else WEBHOOK_PROXY_URL, else app.yml's hook_attributes.url.
  GITHUB_URL (default https://github.com, or from GHE_HOST) and GITHUB_API_URL choose the server.
  Events and permissions are app.yml's; with --handlers, only what those built-in handlers need
  (as \`steward manifest --handlers LIST\` prints). Either way the events and permissions that
  STEWARD_HANDLERS' modules declare, and --permission and --event, are added. The console's OAuth
  callback (--console-url, else STEWARD_STATUS_URL, + /console/callback) is registered when known.
  APP... (the Probot apps or handler modules \`steward run\` hosts) are added as STEWARD_HANDLERS' are;
  without --app-yml the first app's own app.yml is the manifest registered (name and url, when it
  has none, from its package.json's name and homepage), with the needs of the built-in handlers
  --handlers names (default all; --handlers none registers the apps alone)`;

interface RegisterArgs {
  port: number;
  org?: string;
  appYml: string;
  envFile: string;
  webhookUrl?: string;
  handlers?: string;
  permissions: PermissionSet;
  events: string[];
  consoleUrl?: string;
  /** Hosted apps named on the command line (paths). */
  apps: string[];
  appYmlGiven: boolean;
}

export function parseRegisterArgs(args: string[]): RegisterArgs | string {
  const out: RegisterArgs = {
    port: 3000,
    appYml: "app.yml",
    envFile: ".env",
    permissions: {},
    events: [],
    apps: [],
    appYmlGiven: false,
  };
  for (let i = 0; i < args.length; i++) {
    const shared = parseNeedsFlag(args, i, out);
    if (typeof shared === "string") return shared;
    if (shared) {
      i = shared.next;
      continue;
    }
    if (!args[i]!.startsWith("-")) {
      out.apps.push(args[i]!);
      continue;
    }
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (!["--port", "--org", "--app-yml", "--env-file", "--webhook-url"].includes(flag))
      return `unknown option "${args[i]}"`;
    const value = inline ?? args[++i];
    if (value === undefined || value === "") return `${flag} needs a value`;
    if (flag === "--port") {
      const port = Number(value);
      if (!Number.isInteger(port) || port < 0 || port > 65535) return `--port must be a port number (got "${value}")`;
      out.port = port;
    } else if (flag === "--org") out.org = value;
    else if (flag === "--app-yml") ((out.appYml = value), (out.appYmlGiven = true));
    else if (flag === "--env-file") out.envFile = value;
    else {
      if (!/^https?:\/\//.test(value)) return `--webhook-url must be an http(s) URL (got "${value}")`;
      out.webhookUrl = value;
    }
  }
  return out;
}

/**
 * The events and permissions to register when they differ from app.yml's: --handlers' built-in
 * handlers only, and in any case what STEWARD_HANDLERS' modules declare and --permission/--event add.
 */
async function registerNeeds(
  parsed: RegisterArgs,
  appYml: string,
  env: NodeJS.ProcessEnv,
): Promise<Pick<AppNeeds, "default_events" | "default_permissions"> | undefined> {
  const paths = [...loadHandlerPaths(env), ...parsed.apps];
  // With apps named, the base is an app's own app.yml: the built-in handlers' needs are added
  // (all of them, as `steward start` runs them, unless --handlers names others).
  const handlers = parsed.handlers ?? (parsed.apps.length > 0 ? "all" : undefined);
  if (
    handlers === undefined &&
    paths.length === 0 &&
    parsed.events.length === 0 &&
    Object.keys(parsed.permissions).length === 0
  )
    return undefined;
  const { builtinHandlers } = await import("../../../handlers/index.js");
  const modules = await declaredModules(paths);
  const needs = appNeeds({
    builtins: selectBuiltins(handlers ?? "none", builtinHandlers),
    modules,
    reviewer: (env.STEWARD_REVIEWER_TOKEN ?? "").trim() !== "",
    permissions: parsed.permissions,
    events: parsed.events,
  });
  for (const what of needs.undeclared)
    process.stderr.write(`steward register: ${what}: add what it needs with --event and --permission\n`);
  if (handlers !== undefined) return needs;
  const manifest = manifestFromAppYml(appYml, { redirectUrl: "http://127.0.0.1/callback" });
  return unionNeeds(
    {
      default_events: (manifest.default_events as string[] | undefined) ?? [],
      default_permissions: (manifest.default_permissions as PermissionSet | undefined) ?? {},
    },
    needs,
  );
}

/**
 * A hosted app's app.yml as the manifest to register: the name and url GitHub requires, when the
 * file leaves them out, from the package.json beside it or above it (its name and homepage, or
 * its repository's URL), as Probot's own manifest flow fills them.
 */
function withPackageIdentity(text: string, appYmlFile: string): string {
  const doc = (parse(text) ?? {}) as Record<string, unknown>;
  if (typeof doc !== "object" || Array.isArray(doc) || (typeof doc.name === "string" && typeof doc.url === "string"))
    return text;
  const pkg = packageJsonFor(appYmlFile);
  const repository = typeof pkg?.repository === "string" ? pkg.repository : (pkg?.repository as { url?: unknown })?.url;
  const url = [pkg?.homepage, repository].find((u): u is string => typeof u === "string" && /^https?:\/\//.test(u));
  return stringify({
    ...(typeof pkg?.name === "string" && doc.name === undefined ? { name: pkg.name } : {}),
    ...(url && doc.url === undefined ? { url } : {}),
    ...doc,
  });
}

function packageJsonFor(file: string): Record<string, unknown> | undefined {
  for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) {
      try {
        return JSON.parse(readFileSync(candidate, "utf8")) as Record<string, unknown>;
      } catch {
        return undefined;
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** GitHub's web site and REST API for this environment. */
export function serverUrls(env: NodeJS.ProcessEnv): { githubUrl: string; apiUrl: string } {
  const trim = (u: string) => u.replace(/\/+$/, "");
  const ghe = env.GHE_HOST ? `${env.GHE_PROTOCOL ?? "https"}://${env.GHE_HOST}` : undefined;
  return {
    githubUrl: trim(env.GITHUB_URL ?? ghe ?? "https://github.com"),
    apiUrl: trim(env.GITHUB_API_URL ?? (ghe ? `${ghe}/api/v3` : "https://api.github.com")),
  };
}

/** `then`: what the caller does next (the first run of `steward start`/`run` starts as the app). */
export async function run(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  then = "then run steward start",
): Promise<number> {
  const parsed = parseRegisterArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`steward register: ${parsed}\n${usage}\n`);
    return 2;
  }
  let own: AppManifest | undefined;
  let appYml: string;
  let appYmlFile = parsed.appYml;
  try {
    own = parsed.appYmlGiven ? undefined : parsed.apps.map((a) => appManifestOf(a)).find((m) => m !== undefined);
    appYmlFile = own?.file ?? parsed.appYml;
    appYml = await readFile(resolve(appYmlFile), "utf8");
    if (own) appYml = withPackageIdentity(appYml, own.file);
  } catch (e) {
    const why = e instanceof AppManifestError ? e.message : ((e as NodeJS.ErrnoException).code ?? (e as Error).message);
    process.stderr.write(`steward register: cannot read ${appYmlFile}: ${why}\n`);
    return 1;
  }
  const hookUrl = parsed.webhookUrl ?? env.WEBHOOK_PROXY_URL;
  const consoleUrl = parsed.consoleUrl ?? env.STEWARD_STATUS_URL?.trim();
  let needs: Pick<AppNeeds, "default_events" | "default_permissions"> | undefined;
  try {
    needs = await registerNeeds(parsed, appYml, env);
  } catch (e) {
    process.stderr.write(`steward register: ${(e as Error).message}\n`);
    return 1;
  }
  const { githubUrl, apiUrl } = serverUrls(env);
  let registration;
  try {
    manifestFromAppYml(appYml, { redirectUrl: "http://127.0.0.1/callback" }); // refuse a bad app.yml before serving
    registration = await startRegistration({
      manifest: (redirectUrl) => {
        const manifest = manifestFromAppYml(appYml, { redirectUrl, ...(hookUrl ? { hookUrl } : {}) });
        const callback = consoleUrl ? consoleCallbackUrl(consoleUrl) : undefined;
        if (needs) return withNeeds(manifest, needs, callback);
        return callback ? { ...manifest, callback_urls: [callback] } : manifest;
      },
      githubUrl,
      apiUrl,
      ...(parsed.org ? { org: parsed.org } : {}),
      port: parsed.port,
      envFile: resolve(parsed.envFile),
      ...(apiUrl !== "https://api.github.com" && env.GITHUB_API_URL ? { extraEnv: { GITHUB_API_URL: apiUrl } } : {}),
    });
  } catch (e) {
    process.stderr.write(`steward register: ${(e as Error).message}\n`);
    return 1;
  }
  process.stdout.write(
    `Open ${registration.url} in a browser to register the app on ${githubUrl}${parsed.org ? ` for ${parsed.org}` : ""}.\n`,
  );
  try {
    const app = await registration.done;
    process.stdout.write(
      `Registered ${app.name} (app id ${app.id}${app.owner ? `, owner ${app.owner}` : ""}). APP_ID, PRIVATE_KEY, WEBHOOK_SECRET, GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are in ${parsed.envFile}.\n` +
        `Next: install it${app.htmlUrl ? ` (${app.htmlUrl}/installations/new)` : ""}; ${then}.\n`,
    );
    return 0;
  } catch (e) {
    process.stderr.write(`steward register: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await registration.close();
  }
}
