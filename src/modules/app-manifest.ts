// A hosted app's own manifest: the `app.yml` a Probot app ships (next to its entry file, or at
// its package's root, where `probot run` and the manifest flow look for it). Its
// `default_events` and `default_permissions` are what the app needs: the sandbox installs the
// app with them, `steward register` and `steward manifest` add them to the enabled handlers'.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, parse as parsePath, resolve } from "node:path";
import { parse as parseYaml } from "yaml";

export type Permissions = Record<string, "read" | "write">;

export interface AppManifest {
  /** The app.yml read (absolute path). */
  file: string;
  events: string[];
  permissions: Permissions;
}

/** A manifest file that is there but unusable: the message names the file and what is wrong. */
export class AppManifestError extends Error {}

/**
 * The app.yml that belongs to the module at `modulePath`: in the entry's folder, or in a folder
 * above it up to (and including) the nearest one with a package.json. Undefined when there is none.
 */
export function findAppManifest(modulePath: string): string | undefined {
  let dir = dirname(resolve(modulePath));
  const top = parsePath(dir).root;
  for (;;) {
    const candidate = join(dir, "app.yml");
    if (existsSync(candidate)) return candidate;
    if (existsSync(join(dir, "package.json")) || dir === top) return undefined;
    dir = dirname(dir);
  }
}

/** Reads `file` as an app manifest; throws AppManifestError naming the file and the field at fault. */
export function readAppManifest(file: string): AppManifest {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, "utf8"));
  } catch (e) {
    throw new AppManifestError(`${file}: not readable YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  if (doc === null || doc === undefined) doc = {};
  if (typeof doc !== "object" || Array.isArray(doc)) throw new AppManifestError(`${file}: not a mapping of fields`);
  const { default_events: events = [], default_permissions: permissions = {} } = doc as Record<string, unknown>;
  if (!Array.isArray(events) || !events.every((e) => typeof e === "string" && /^[a-z_]+$/.test(e)))
    throw new AppManifestError(`${file}: default_events must be a list of event names`);
  if (typeof permissions !== "object" || permissions === null || Array.isArray(permissions))
    throw new AppManifestError(`${file}: default_permissions must map permission names to read or write`);
  for (const [name, level] of Object.entries(permissions))
    if (level !== "read" && level !== "write")
      throw new AppManifestError(`${file}: default_permissions.${name} must be read or write (got ${String(level)})`);
  return { file, events: [...new Set(events as string[])], permissions: { ...(permissions as Permissions) } };
}

/** The manifest of the module at `modulePath`, if it has one. */
export function appManifestOf(modulePath: string): AppManifest | undefined {
  const file = findAppManifest(modulePath);
  return file ? readAppManifest(file) : undefined;
}

/** Both grants together: every event of either, each permission at the higher level. */
export function unionGrant(
  a: { events: readonly string[]; permissions: Permissions },
  b: { events: readonly string[]; permissions: Permissions },
): { events: string[]; permissions: Permissions } {
  const permissions: Permissions = { ...a.permissions };
  for (const [name, level] of Object.entries(b.permissions))
    if (permissions[name] !== "write") permissions[name] = level;
  return { events: [...new Set([...a.events, ...b.events])], permissions };
}
