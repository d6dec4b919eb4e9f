// `steward manifest [--handlers LIST] [--permission NAME=LEVEL]... [--event NAME]... [--webhook-url URL]
// [--console-url URL] [--app-yml FILE] [--json]`: app.yml with only the events and permissions the
// enabled handlers need (built-in ones chosen by --handlers, plus what STEWARD_HANDLERS' modules
// declare), and the console's OAuth callback URL. Prints it; registers nothing.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parse, stringify } from "yaml";
import { builtinHandlers } from "../../../handlers/index.js";
import { loadHandlerPaths } from "../../config/env.js";
import { packageFile } from "../../package-root.js";
import {
  appNeeds,
  consoleCallbackUrl,
  declaredModules,
  HTTP_URL,
  parseNeedsFlag,
  selectBuiltins,
  withNeeds,
  type PermissionSet,
} from "../register/least-privilege.js";

export const usage = `usage: steward manifest [--handlers LIST] [--permission NAME=LEVEL]... [--event NAME]...
                        [--webhook-url URL] [--console-url URL] [--app-yml FILE] [--json]
  prints the GitHub App manifest (app.yml's fields) with only the events and permissions the
  enabled handlers need: the built-in handlers in LIST (rerun,deployments,checks,secrets; default
  all), the modules in STEWARD_HANDLERS (their events and \`permissions\`), and what --permission
  (e.g. issues=write) and --event add. workflow_run and workflow_job are kept for deployments only
  with STEWARD_REVIEWER_TOKEN set. --console-url (else STEWARD_STATUS_URL) adds the console's OAuth
  callback URL; --webhook-url sets hook_attributes.url. Use the output as app.yml for
  \`steward register\`, or pass the same --handlers to \`steward register\``;

export interface ManifestArgs {
  handlers?: string;
  permissions: PermissionSet;
  events: string[];
  webhookUrl?: string;
  consoleUrl?: string;
  appYml?: string;
  json: boolean;
}

export function parseManifestArgs(args: string[]): ManifestArgs | string {
  const out: ManifestArgs = { permissions: {}, events: [], json: false };
  for (let i = 0; i < args.length; i++) {
    const shared = parseNeedsFlag(args, i, out);
    if (typeof shared === "string") return shared;
    if (shared) {
      i = shared.next;
      continue;
    }
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag === "--json") {
      out.json = true;
      continue;
    }
    if (flag !== "--webhook-url" && flag !== "--app-yml") return `unknown option "${args[i]}"`;
    const value = inline ?? args[++i];
    if (value === undefined || value === "") return `${flag} needs a value`;
    if (flag === "--app-yml") out.appYml = value;
    else {
      if (!HTTP_URL.test(value)) return `--webhook-url must be an http(s) URL (got "${value}")`;
      out.webhookUrl = value;
    }
  }
  return out;
}

/** The manifest for these arguments and environment, and the modules whose needs could not be read. */
export async function buildManifest(
  parsed: ManifestArgs,
  env: NodeJS.ProcessEnv,
): Promise<{ manifest: Record<string, unknown>; undeclared: string[] }> {
  const text = await readFile(parsed.appYml ? resolve(parsed.appYml) : packageFile("app.yml"), "utf8");
  const doc: unknown = parse(text);
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw new Error("app.yml is not a mapping of manifest fields");
  const needs = appNeeds({
    builtins: selectBuiltins(parsed.handlers ?? "all", builtinHandlers),
    modules: await declaredModules(loadHandlerPaths(env)),
    reviewer: (env.STEWARD_REVIEWER_TOKEN ?? "").trim() !== "",
    permissions: parsed.permissions,
    events: parsed.events,
  });
  const base = { ...(doc as Record<string, unknown>) };
  if (parsed.webhookUrl) {
    const hook =
      typeof base.hook_attributes === "object" && base.hook_attributes !== null
        ? (base.hook_attributes as Record<string, unknown>)
        : {};
    base.hook_attributes = { ...hook, url: parsed.webhookUrl, active: true };
  }
  const console = parsed.consoleUrl ?? env.STEWARD_STATUS_URL?.trim();
  return {
    manifest: withNeeds(base, needs, console ? consoleCallbackUrl(console) : undefined),
    undeclared: needs.undeclared,
  };
}

export async function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseManifestArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`steward manifest: ${parsed}\n${usage}\n`);
    return 2;
  }
  let built;
  try {
    built = await buildManifest(parsed, env);
  } catch (e) {
    process.stderr.write(`steward manifest: ${(e as Error).message}\n`);
    return 1;
  }
  for (const what of built.undeclared) {
    process.stderr.write(`steward manifest: ${what}: add what it needs with --event and --permission\n`);
  }
  if (parsed.json) process.stdout.write(`${JSON.stringify(built.manifest, null, 2)}\n`);
  else process.stdout.write(`# steward manifest ${args.join(" ")}`.trimEnd() + "\n" + stringify(built.manifest));
  return 0;
}
