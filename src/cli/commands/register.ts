// `steward register [--port P] [--org ORG] [--app-yml FILE] [--env-file FILE] [--webhook-url URL]`:
// GitHub's App Manifest flow. Serves a page on 127.0.0.1 that posts app.yml as a manifest to
// GitHub, exchanges the code GitHub returns, and writes the app's credentials to .env.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
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
                        [--handlers LIST] [--permission NAME=LEVEL]... [--event NAME]... [--console-url URL]
  registers Steward as a GitHub App from app.yml (GitHub's App Manifest flow): open the page it
  serves on http://127.0.0.1:P (default 3000), confirm on GitHub, and APP_ID, PRIVATE_KEY,
  WEBHOOK_SECRET, GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are written to .env (mode 0600,
  other lines kept). --org registers it under an organisation. Deliveries go to --webhook-url,
  else WEBHOOK_PROXY_URL, else app.yml's hook_attributes.url.
  GITHUB_URL (default https://github.com, or from GHE_HOST) and GITHUB_API_URL choose the server.
  Events and permissions are app.yml's; with --handlers, only what those built-in handlers need
  (as \`steward manifest --handlers LIST\` prints). Either way the events and permissions that
  STEWARD_HANDLERS' modules declare, and --permission and --event, are added. The console's OAuth
  callback (--console-url, else STEWARD_STATUS_URL, + /console/callback) is registered when known`;

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
}

export function parseRegisterArgs(args: string[]): RegisterArgs | string {
  const out: RegisterArgs = { port: 3000, appYml: "app.yml", envFile: ".env", permissions: {}, events: [] };
  for (let i = 0; i < args.length; i++) {
    const shared = parseNeedsFlag(args, i, out);
    if (typeof shared === "string") return shared;
    if (shared) {
      i = shared.next;
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
    else if (flag === "--app-yml") out.appYml = value;
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
  const paths = loadHandlerPaths(env);
  if (
    parsed.handlers === undefined &&
    paths.length === 0 &&
    parsed.events.length === 0 &&
    Object.keys(parsed.permissions).length === 0
  )
    return undefined;
  const { builtinHandlers } = await import("../../../handlers/index.js");
  const modules = await declaredModules(paths);
  const needs = appNeeds({
    builtins: selectBuiltins(parsed.handlers ?? "none", builtinHandlers),
    modules,
    reviewer: (env.STEWARD_REVIEWER_TOKEN ?? "").trim() !== "",
    permissions: parsed.permissions,
    events: parsed.events,
  });
  for (const what of needs.undeclared)
    process.stderr.write(`steward register: ${what}: add what it needs with --event and --permission\n`);
  if (parsed.handlers !== undefined) return needs;
  const manifest = manifestFromAppYml(appYml, { redirectUrl: "http://127.0.0.1/callback" });
  return unionNeeds(
    {
      default_events: (manifest.default_events as string[] | undefined) ?? [],
      default_permissions: (manifest.default_permissions as PermissionSet | undefined) ?? {},
    },
    needs,
  );
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

export async function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseRegisterArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`steward register: ${parsed}\n${usage}\n`);
    return 2;
  }
  let appYml: string;
  try {
    appYml = await readFile(resolve(parsed.appYml), "utf8");
  } catch (e) {
    process.stderr.write(
      `steward register: cannot read ${parsed.appYml}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`,
    );
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
        `Next: install it${app.htmlUrl ? ` (${app.htmlUrl}/installations/new)` : ""}, then run steward start.\n`,
    );
    return 0;
  } catch (e) {
    process.stderr.write(`steward register: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await registration.close();
  }
}
