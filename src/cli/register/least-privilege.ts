// The GitHub App manifest's events and permissions for the handlers a Steward runs, and no
// more: `steward manifest` prints it, `steward register --handlers` registers with it, and
// app.yml is this for every built-in handler plus `issues: write` for modules you add
// (test/cli/manifest.test.ts keeps them equal). Events come from the modules' own `events`;
// permissions from what each built-in handler calls (the table below, each with its reason),
// a module's own `permissions`, and what GitHub requires to subscribe to each event.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { HandlerModule } from "../../handler.js";
import { appManifestOf, type AppManifest } from "../../modules/app-manifest.js";

export type AccessLevel = "read" | "write";
export type PermissionSet = Record<string, AccessLevel>;

/** Steward itself, whatever handlers run. */
const STEWARD_ITSELF: { events: readonly string[]; permissions: PermissionSet } = {
  // A push that changes .github/steward.yml (or the admin repository's documents) refreshes the cached policy.
  events: ["push"],
  // contents: the policy loader reads .github/steward.yml and the admin repository; metadata: every app.
  permissions: { metadata: "read", contents: "read" },
};

/** What each built-in handler calls (handlers/NAME), beyond what its events require. */
export const BUILTIN_NEEDS: Readonly<
  Record<string, { permissions: PermissionSet; reviewerOnlyEvents?: readonly string[] }>
> = {
  // Re-runs failed jobs and runs, reads run and job logs; lists a branch's pull requests; steward/rerun check runs.
  rerun: { permissions: { actions: "write", pull_requests: "read", checks: "write", merge_queues: "read" } },
  // Answers deployment protection rules; reads runs, pending deployments and check runs; organisation
  // gates by custom property (GET /orgs/{org}/properties/values). Runs and jobs waiting for review
  // are answered only with STEWARD_REVIEWER_TOKEN (as the reviewer): without it their events are not taken.
  deployments: {
    permissions: { deployments: "write", actions: "read", checks: "read", organization_custom_properties: "read" },
    reviewerOnlyEvents: ["workflow_run", "workflow_job"],
  },
  // The steward/config check run; lists the files a pull request changes.
  checks: { permissions: { checks: "write", pull_requests: "read", merge_queues: "read" } },
  // Writes repository, environment and organisation Actions secrets and variables; steward/sync and steward/plan check runs.
  secrets: {
    permissions: {
      secrets: "write",
      actions_variables: "write",
      environments: "write",
      organization_secrets: "write",
      organization_actions_variables: "write",
      checks: "write",
      pull_requests: "read",
      merge_queues: "read",
    },
  },
};

/** The permission GitHub requires (at least read) for an app to subscribe to an event. */
const EVENT_PERMISSION: Readonly<Record<string, string>> = {
  check_run: "checks",
  check_suite: "checks",
  pull_request: "pull_requests",
  pull_request_review: "pull_requests",
  pull_request_review_comment: "pull_requests",
  pull_request_review_thread: "pull_requests",
  push: "contents",
  create: "contents",
  delete: "contents",
  release: "contents",
  commit_comment: "contents",
  workflow_run: "actions",
  workflow_job: "actions",
  workflow_dispatch: "contents",
  deployment_review: "actions",
  merge_group: "merge_queues",
  deployment: "deployments",
  deployment_status: "deployments",
  deployment_protection_rule: "deployments",
  issues: "issues",
  issue_comment: "issues",
  milestone: "issues",
  label: "metadata",
  repository: "metadata",
  public: "metadata",
  member: "members",
  status: "statuses",
  discussion: "discussions",
  discussion_comment: "discussions",
  custom_property_values: "organization_custom_properties",
};

/** Sent to every app, no permission needed. */
const ALWAYS_SENT = new Set([
  "installation",
  "installation_repositories",
  "installation_target",
  "github_app_authorization",
]);

export interface AppNeeds {
  default_events: string[];
  default_permissions: PermissionSet;
  /** Modules whose needs are not known (Probot apps, `*`, not loadable here), each with why: add them by hand. */
  undeclared: string[];
}

export interface NeedsOptions {
  /** Built-in handlers enabled (by name; see BUILTIN_NEEDS). */
  builtins: readonly HandlerModule<any>[];
  /** Other modules (STEWARD_HANDLERS): their `events` and `permissions`. */
  modules?: readonly (HandlerModule<any> | { name: string; undeclared: true; reason: string })[];
  /** STEWARD_REVIEWER_TOKEN is set: the deployments handler answers runs waiting for review. */
  reviewer: boolean;
  /** Added by hand (--permission, --event). */
  permissions?: PermissionSet;
  events?: readonly string[];
}

function grant(into: PermissionSet, name: string, level: AccessLevel): void {
  if (into[name] !== "write") into[name] = level;
}

/** The events and permissions of this handler set, each at the lowest level that serves it. */
export function appNeeds(opts: NeedsOptions): AppNeeds {
  const events = new Set<string>(STEWARD_ITSELF.events);
  const permissions: PermissionSet = { ...STEWARD_ITSELF.permissions };
  const undeclared: string[] = [];
  for (const module of opts.builtins) {
    const needs = BUILTIN_NEEDS[module.name];
    if (!needs) throw new Error(`no permissions known for built-in handler ${module.name}`);
    for (const [name, level] of Object.entries(needs.permissions)) grant(permissions, name, level);
    for (const e of module.events) {
      const event = e.split(".")[0]!;
      if (!opts.reviewer && needs.reviewerOnlyEvents?.includes(event)) continue;
      events.add(event);
    }
  }
  for (const module of opts.modules ?? []) {
    if ("undeclared" in module) {
      undeclared.push(`${module.name} ${module.reason}`);
      continue;
    }
    for (const [name, level] of Object.entries(module.permissions ?? {})) grant(permissions, name, level);
    for (const e of module.events) {
      if (e === "*") undeclared.push(`${module.name} takes every event ("*")`);
      else events.add(e.split(".")[0]!);
    }
  }
  for (const [name, level] of Object.entries(opts.permissions ?? {})) grant(permissions, name, level);
  for (const e of opts.events ?? []) events.add(e);
  for (const event of events) {
    const needed = EVENT_PERMISSION[event];
    if (needed) grant(permissions, needed, "read");
  }
  return {
    default_events: [...events].sort(),
    default_permissions: Object.fromEntries(Object.entries(permissions).sort(([a], [b]) => a.localeCompare(b))),
    undeclared: [...new Set(undeclared)],
  };
}

/** Whether GitHub needs no permission for the app to receive `event` (or knows none this table lists). */
export function eventNeedsNoPermission(event: string): boolean {
  return ALWAYS_SENT.has(event);
}

/** `rerun,deployments` (or `all`, `none`) as built-in modules; an unknown name throws, listing the known ones. */
export function selectBuiltins(list: string, builtins: readonly HandlerModule<any>[]): HandlerModule<any>[] {
  const names = list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 1 && names[0] === "all") return [...builtins];
  if (names.length === 1 && names[0] === "none") return [];
  const known = builtins.map((b) => b.name);
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0)
    throw new Error(
      `unknown handler ${unknown.map((u) => `"${u}"`).join(", ")} (built-in handlers: ${known.join(", ")}; or all, none)`,
    );
  return builtins.filter((b) => names.includes(b.name));
}

/** `NAME=read|write` for --permission. */
export function parsePermission(spec: string): [string, AccessLevel] | undefined {
  const m = /^([a-z_]+)[=:](read|write)$/.exec(spec.trim());
  return m ? [m[1]!, m[2] as AccessLevel] : undefined;
}

/**
 * What the modules named by STEWARD_HANDLERS declare, read from their default exports without
 * starting them: a Probot app function declares nothing (its needs are in its own app.yml), and a
 * module that cannot be loaded here is reported as undeclared with the reason.
 */
export async function declaredModules(paths: readonly string[]): Promise<NonNullable<NeedsOptions["modules"]>> {
  const out: NonNullable<NeedsOptions["modules"]>[number][] = [];
  for (const raw of paths.map((p) => p.trim()).filter((p) => p !== "")) {
    const path = resolve(process.cwd(), raw);
    let exported: unknown;
    try {
      if (!existsSync(path)) throw new Error(`no such file (${path})`);
      // A TypeScript module needs tsx's loader when Steward runs compiled (as the service's loader does).
      if (/\.[cm]?ts$/.test(path) && !import.meta.url.endsWith(".ts"))
        await import("tsx/esm/api").then((tsx) => tsx.register());
      const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
      exported = mod.default;
      if (typeof exported === "object" && exported !== null && "default" in exported && !("events" in exported))
        exported = (exported as { default: unknown }).default;
    } catch (e) {
      out.push({ name: raw, undeclared: true, reason: `could not be loaded: ${(e as Error).message.split("\n")[0]}` });
      continue;
    }
    const m = exported as Partial<HandlerModule<any>> | undefined;
    if (m && typeof m === "object" && typeof m.name === "string" && Array.isArray(m.events)) {
      out.push(m as HandlerModule<any>);
      continue;
    }
    // A Probot app declares its needs in its own app.yml, as it would to be registered alone.
    let own: AppManifest | undefined;
    try {
      own = appManifestOf(path);
    } catch (e) {
      out.push({ name: raw, undeclared: true, reason: (e as Error).message });
      continue;
    }
    if (own) out.push({ name: raw, events: own.events, permissions: own.permissions } as unknown as HandlerModule<any>);
    else
      out.push({
        name: raw,
        undeclared: true,
        reason:
          "declares no events: a Probot app declares them in an app.yml next to its entry file or at its package root",
      });
  }
  return out;
}

/** The console's OAuth callback for a public base (STEWARD_STATUS_URL's origin). */
export function consoleCallbackUrl(statusUrl: string): string {
  return `${new URL(statusUrl).origin}/console/callback`;
}

/** `manifest` with its events and permissions replaced by `needs`, and the console's callback URL when known. */
export function withNeeds(
  manifest: Record<string, unknown>,
  needs: Pick<AppNeeds, "default_events" | "default_permissions">,
  callbackUrl?: string,
): Record<string, unknown> {
  return {
    ...manifest,
    ...(callbackUrl ? { callback_urls: [callbackUrl] } : {}),
    default_events: needs.default_events,
    default_permissions: needs.default_permissions,
  };
}

/** Both sets of needs together, each permission at the higher level (app.yml's lists and a module's additions). */
export function unionNeeds(
  a: Pick<AppNeeds, "default_events" | "default_permissions">,
  b: Pick<AppNeeds, "default_events" | "default_permissions">,
): Pick<AppNeeds, "default_events" | "default_permissions"> {
  const permissions: PermissionSet = { ...a.default_permissions };
  for (const [name, level] of Object.entries(b.default_permissions)) grant(permissions, name, level);
  return {
    default_events: [...new Set([...a.default_events, ...b.default_events])],
    default_permissions: permissions,
  };
}

/** The flags `steward manifest` and `steward register` share. */
export interface NeedsFlags {
  handlers?: string;
  permissions: PermissionSet;
  events: string[];
  consoleUrl?: string;
}

export const HTTP_URL = /^https?:\/\/[^\s/]+/;

/** Parses the flags `steward manifest` and `steward register` share into `out`; returns an error, the index consumed, or undefined when `args[i]` is not one of them. */
export function parseNeedsFlag(args: string[], i: number, out: NeedsFlags): { next: number } | string | undefined {
  const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
  if (!["--handlers", "--permission", "--event", "--console-url"].includes(flag)) return undefined;
  const next = inline === undefined ? i + 1 : i;
  const value = inline ?? args[i + 1];
  if (value === undefined || value === "") return `${flag} needs a value`;
  if (flag === "--handlers") out.handlers = value;
  else if (flag === "--permission") {
    const parsed = parsePermission(value);
    if (!parsed) return `--permission must be NAME=read or NAME=write, e.g. issues=write (got "${value}")`;
    if (out.permissions[parsed[0]] !== "write") out.permissions[parsed[0]] = parsed[1];
  } else if (flag === "--event") {
    if (!/^[a-z_]+$/.test(value)) return `--event must be an event name such as issues (got "${value}")`;
    out.events.push(value);
  } else {
    if (!HTTP_URL.test(value)) return `--console-url must be an http(s) URL (got "${value}")`;
    out.consoleUrl = value;
  }
  return { next };
}
