// Resolving `from: env:NAME | file:/path` to a value, in memory only, confined to what the operator
// exposes to the organisation (exposure.ts). Whatever the reason a source cannot be read (not
// exposed, one of Steward's own settings, its key file or data, unset, missing, unreadable), the
// answer is the same sentence, so a policy author learns nothing about the host from it.
import { closeSync, fstatSync, openSync, readFileSync, realpathSync } from "node:fs";
import { sep } from "node:path";
import { isSettingName, settingPaths } from "../../src/index.js";
import { containsRegisteredSecret } from "../../src/index.js";
import { exposureFor, parseExposures, SOURCES_VARIABLE, type Exposure } from "./exposure.js";

export type ParsedSource = { kind: "env"; name: string } | { kind: "file"; path: string };

/** Parse `env:NAME` / `file:/path`; undefined for anything else. */
export function parseSource(from: string): ParsedSource | undefined {
  const env = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(from);
  if (env) return { kind: "env", name: env[1]! };
  const file = /^file:(\/.+)$/.exec(from);
  if (file) return { kind: "file", path: file[1]! };
  return undefined;
}

/**
 * What is wrong with a `from` as written, whatever the host holds: not env:NAME or file:/path
 * (the message never contains the value, nor `from` itself).
 */
export function sourceFormError(from: string): string | undefined {
  if (parseSource(from)) return undefined;
  // Never echo `from` itself: a refused "source" may well be the secret pasted in.
  return /^[a-z]+:/i.test(from)
    ? `unknown source: "from" must be env:NAME or file:/path`
    : `"from" must be env:NAME or file:/path; literal secret values are not allowed`;
}

export type SourceResult = { ok: true; value: string } | { ok: false; error: string };

/** GitHub stores secrets of up to 48 KB; a larger "secret" file is not one. */
const MAX_SOURCE_BYTES = 64 * 1024;

export interface SourceScope {
  /** The organisation (installation account) whose policy names the source. */
  org: string;
  env?: NodeJS.ProcessEnv;
  /** Steward's data directory (fingerprint key, store): never readable as a source. */
  dataDir?: string;
}

/** The one answer for every source that cannot be read. */
export function notAvailable(from: string): string {
  return `source ${from} is not available (it is not set, or not exposed to this organisation by ${SOURCES_VARIABLE})`;
}

function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

function real(path: string | undefined): string | undefined {
  if (!path) return undefined;
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

function readEnv(name: string, exposure: Exposure, env: NodeJS.ProcessEnv): string | undefined {
  if (isSettingName(name)) return undefined;
  if (!exposure.envPrefixes.some((p) => name.startsWith(p))) return undefined;
  return env[name];
}

function readFileSource(
  path: string,
  exposure: Exposure,
  scope: SourceScope,
  env: NodeJS.ProcessEnv,
): string | undefined {
  const target = real(path);
  if (!target) return undefined;
  if (
    !exposure.dirs.some((d) => {
      const dir = real(d);
      return dir !== undefined && within(target, dir);
    })
  )
    return undefined;
  // Steward's own credentials and state, even inside an exposed directory.
  const own = [env.PRIVATE_KEY_PATH, scope.dataDir, env.STEWARD_DATA_DIR, ...settingPaths()].map(real);
  if (own.some((p) => p !== undefined && within(target, p))) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(target, "r");
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_SOURCE_BYTES) return undefined;
    // Files written by `echo` carry one trailing newline.
    return readFileSync(fd, "utf8")
      .slice(0, MAX_SOURCE_BYTES)
      .replace(/\r?\n$/, "");
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Resolves one source for one organisation (small local reads, so synchronous). */
export function resolveSource(from: string, scope: SourceScope): SourceResult {
  const formError = sourceFormError(from);
  if (formError) return { ok: false, error: formError };
  const source = parseSource(from)!;
  const env = scope.env ?? process.env;
  const exposure = exposureFor(parseExposures(env[SOURCES_VARIABLE]), scope.org);
  const value =
    source.kind === "env" ? readEnv(source.name, exposure, env) : readFileSource(source.path, exposure, scope, env);
  // Last guard: whatever the path or name, a value holding one of Steward's own credentials.
  if (value === undefined || containsRegisteredSecret(value)) return { ok: false, error: notAvailable(from) };
  return { ok: true, value };
}

/** Resolve each distinct source once per sync. */
export async function readSources(froms: Iterable<string>, scope: SourceScope): Promise<Map<string, SourceResult>> {
  const out = new Map<string, SourceResult>();
  for (const from of new Set(froms)) out.set(from, resolveSource(from, scope));
  return out;
}
