// Parses Steward's configuration from the environment. Every problem stops start-up with
// one line naming the variable and what is wrong; secret values are never echoed.
import { createPrivateKey } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { StewardConfig, StoreSettings } from "./types.js";
import { noteSettingName, noteSettingPath } from "./setting-names.js";
import { parseDuration } from "./duration.js";
import { registerSecret } from "../log/redact.js";

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
    this.name = "ConfigError";
  }
}

type Env = NodeJS.ProcessEnv;

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;

/** The value of a variable, trimmed; undefined when unset or blank. */
function read(env: Env, name: string): string | undefined {
  noteSettingName(name);
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/** A path holding Steward's credentials or state: never readable as a secrets source. */
function notedPath(path: string): string {
  noteSettingPath(path);
  return path;
}

/** Quote a non-secret value for an error line, shortened so a pasted blob stays one line. */
function shown(value: string): string {
  const flat = value.replace(/\s+/g, " ");
  return JSON.stringify(flat.length > 60 ? `${flat.slice(0, 57)}...` : flat);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got ${shown(raw)})`);
  }
  return n;
}

function duration(env: Env, name: string, fallback: string): number {
  const raw = read(env, name) ?? fallback;
  const ms = /^\d+(\.\d+)?$/.test(raw) ? parseDuration(Number(raw)) : parseDuration(raw);
  if (ms === undefined) {
    throw new ConfigError(name, `must be a duration such as 30s, 10m, 6h or 250ms (got ${shown(raw)})`);
  }
  return ms;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = read(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(", ")} (got ${shown(raw)})`);
  }
  return raw as T;
}

function httpUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL (got ${shown(raw)})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(name, `must be an http or https URL (got ${shown(raw)})`);
  }
  if (url.username || url.password) {
    // Never echo it: credentials in the URL are secrets.
    throw new ConfigError(name, "must not contain credentials");
  }
  return url.toString().replace(/\/+$/, "");
}

function appId(env: Env): number {
  const raw = read(env, "APP_ID");
  if (raw === undefined) throw new ConfigError("APP_ID", "is not set (the numeric id of the GitHub App)");
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)) || Number(raw) < 1) {
    throw new ConfigError("APP_ID", `must be a positive whole number (got ${shown(raw)})`);
  }
  return Number(raw);
}

/** Accepts a PEM as is, with `\n` escapes (one-line env files), or base64 of the PEM. */
export function normalisePrivateKey(raw: string): string | undefined {
  let text = raw.trim();
  if (!text.includes("-----BEGIN")) {
    if (!/^[A-Za-z0-9+/=\s_-]+$/.test(text)) return undefined;
    text = Buffer.from(text, "base64").toString("utf8").trim();
    if (!text.includes("-----BEGIN")) return undefined;
  }
  text = text.replace(/\\r\\n|\\n/g, "\n").replace(/\r\n/g, "\n");
  return `${text}\n`;
}

function isUsablePrivateKey(pem: string): boolean {
  try {
    return createPrivateKey(pem).asymmetricKeyType === "rsa";
  } catch {
    return false;
  }
}

function privateKey(env: Env): string {
  const inline = read(env, "PRIVATE_KEY");
  const path = read(env, "PRIVATE_KEY_PATH");
  let name: string;
  let raw: string;
  if (inline !== undefined) {
    name = "PRIVATE_KEY";
    raw = inline;
  } else if (path !== undefined) {
    name = "PRIVATE_KEY_PATH";
    noteSettingPath(resolve(path));
    try {
      raw = readFileSync(path, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
      throw new ConfigError(name, `cannot be read: ${shown(path)} (${code})`);
    }
  } else {
    throw new ConfigError(
      "PRIVATE_KEY",
      "is not set (set PRIVATE_KEY to the app's PEM key, or PRIVATE_KEY_PATH to its file)",
    );
  }
  // Register before validating: whatever happens next, the value never reaches a log.
  registerSecret(raw);
  const pem = normalisePrivateKey(raw);
  const what = name === "PRIVATE_KEY" ? "is" : "names a file that is";
  if (pem === undefined || !isUsablePrivateKey(pem)) {
    throw new ConfigError(name, `${what} not a PEM RSA private key (plain, with \\n escapes, or base64)`);
  }
  registerSecret(pem);
  return pem;
}

function webhookSecrets(env: Env): string[] {
  const raw = env.WEBHOOK_SECRET;
  if (raw === undefined || raw.trim() === "") {
    throw new ConfigError(
      "WEBHOOK_SECRET",
      "is not set (the app's webhook secret; a comma-separated list during rotation)",
    );
  }
  const secrets = raw.split(",").map((s) => s.trim());
  secrets.forEach((s) => registerSecret(s));
  if (secrets.some((s) => s === "")) {
    throw new ConfigError("WEBHOOK_SECRET", "has an empty entry in its comma-separated list");
  }
  return secrets;
}

function apiUrl(env: Env): string {
  const explicit = read(env, "GITHUB_API_URL");
  if (explicit !== undefined) return httpUrl("GITHUB_API_URL", explicit);
  const host = read(env, "GHE_HOST");
  if (host === undefined) return "https://api.github.com";
  if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(host)) {
    throw new ConfigError("GHE_HOST", `must be a host name, optionally with :port (got ${shown(host)})`);
  }
  const protocol = oneOf(env, "GHE_PROTOCOL", ["https", "http"] as const, "https");
  return `${protocol}://${host}/api/v3`;
}

function webhookPath(env: Env): string {
  const raw = read(env, "WEBHOOK_PATH") ?? "/api/github/webhooks";
  if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(raw)) {
    throw new ConfigError("WEBHOOK_PATH", `must be a URL path starting with "/" (got ${shown(raw)})`);
  }
  return raw;
}

function adminRepo(env: Env): string {
  const raw = read(env, "STEWARD_ADMIN_REPO") ?? ".github";
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(raw) || raw === "." || raw === "..") {
    throw new ConfigError("STEWARD_ADMIN_REPO", `must be a repository name such as .github (got ${shown(raw)})`);
  }
  return raw;
}

function list(env: Env, name: string): string[] {
  return (read(env, name) ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function reviewerToken(env: Env): string | undefined {
  const token = read(env, "STEWARD_REVIEWER_TOKEN");
  registerSecret(token);
  if (token !== undefined && /\s/.test(token)) {
    throw new ConfigError("STEWARD_REVIEWER_TOKEN", "must be a single token without spaces");
  }
  return token;
}

function host(env: Env): string | undefined {
  const raw = read(env, "HOST");
  if (raw !== undefined && !/^[A-Za-z0-9.:_-]+$/.test(raw)) {
    throw new ConfigError("HOST", `must be a host name or IP address (got ${shown(raw)})`);
  }
  return raw;
}

/** STEWARD_REDIS_URL: redis:// or rediss://; its password is registered as a secret before anything can echo it. */
function redisUrl(env: Env): string | undefined {
  const raw = read(env, "STEWARD_REDIS_URL");
  if (raw === undefined) return undefined;
  const url = secretUrl("STEWARD_REDIS_URL", raw, "redis://127.0.0.1:6379/0");
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new ConfigError("STEWARD_REDIS_URL", `must start with redis:// or rediss:// (got ${shown(url.protocol)})`);
  }
  if (!/^\/?\d*$/.test(url.pathname)) {
    throw new ConfigError(
      "STEWARD_REDIS_URL",
      `must name a database by number, e.g. redis://host:6379/0 (got ${shown(url.pathname)})`,
    );
  }
  return raw;
}

/** A URL that may hold a password: parsed, the password (as written and decoded) registered as a secret before anything can echo it. */
function secretUrl(name: string, raw: string, example: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    registerSecret(raw);
    throw new ConfigError(name, `must be a URL such as ${example}`);
  }
  for (const password of [url.password, url.searchParams.get("password")]) {
    if (!password) continue;
    registerSecret(password);
    try {
      registerSecret(decodeURIComponent(password));
    } catch {
      // not percent-encoded text: the raw form above is what could be echoed
    }
  }
  return url;
}

const SSL_MODES = ["disable", "prefer", "require", "verify-ca", "verify-full"];

/**
 * STEWARD_POSTGRES_URL: postgres:// or postgresql://, TLS as libpq's parameters name it
 * (sslmode, sslrootcert, sslcert, sslkey); its password is registered as a secret first.
 */
function postgresUrl(env: Env): string | undefined {
  const name = "STEWARD_POSTGRES_URL";
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  const url = secretUrl(name, raw, "postgres://steward@db.internal:5432/steward?sslmode=verify-full");
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new ConfigError(name, `must start with postgres:// or postgresql:// (got ${shown(url.protocol)})`);
  }
  if (!url.hostname && !url.searchParams.has("host"))
    throw new ConfigError(name, "must name the server, e.g. postgres://db.internal:5432/steward");
  const mode = url.searchParams.get("sslmode");
  if (mode !== null && !SSL_MODES.includes(mode)) {
    throw new ConfigError(name, `sslmode must be one of ${SSL_MODES.join(", ")} (got ${shown(mode)})`);
  }
  for (const file of ["sslrootcert", "sslcert", "sslkey"]) {
    const path = url.searchParams.get(file);
    if (path !== null && !existsSync(path))
      throw new ConfigError(name, `${file} names a file that does not exist (${shown(path)})`);
  }
  if (mode === "verify-ca" && !url.searchParams.has("sslrootcert")) {
    throw new ConfigError(
      name,
      "sslmode=verify-ca needs sslrootcert (the certificate of the authority that signed the server's)",
    );
  }
  return raw;
}

/** GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (Probot's names): both or neither; the console is off without them. */
function oauthClient(env: Env): Pick<StewardConfig, "oauth" | "sessionSecret"> {
  const id = read(env, "GITHUB_CLIENT_ID");
  const secret = read(env, "GITHUB_CLIENT_SECRET");
  const session = read(env, "STEWARD_SESSION_SECRET");
  registerSecret(secret);
  registerSecret(session);
  if ((id === undefined) !== (secret === undefined)) {
    throw new ConfigError(
      id === undefined ? "GITHUB_CLIENT_ID" : "GITHUB_CLIENT_SECRET",
      "is not set, and the other half of the app's OAuth client is (set both or neither)",
    );
  }
  if (session !== undefined && session.length < 32) {
    throw new ConfigError("STEWARD_SESSION_SECRET", "must be at least 32 characters");
  }
  return {
    ...(id !== undefined && secret !== undefined ? { oauth: { clientId: id, clientSecret: secret } } : {}),
    ...(session !== undefined ? { sessionSecret: session } : {}),
  };
}

/** WEBHOOK_PROXY_URL: the channel's path is its key, so the value is a secret from the start. */
function webhookProxyUrl(env: Env): string | undefined {
  const raw = read(env, "WEBHOOK_PROXY_URL");
  if (raw === undefined) return undefined;
  registerSecret(raw);
  return httpUrl("WEBHOOK_PROXY_URL", raw);
}

/** Just the logging settings: sandbox mode needs them without the rest of the configuration. */
export function loadLogSettings(env: NodeJS.ProcessEnv): Pick<StewardConfig, "logLevel" | "logFormat"> {
  return {
    logLevel: oneOf(env, "LOG_LEVEL", LOG_LEVELS, "info"),
    logFormat: oneOf(env, "LOG_FORMAT", ["json", "pretty"] as const, "json"),
  };
}

/** Where the service keeps its state, for operator commands that need nothing else (no app credentials). */
export function loadStoreSettings(env: NodeJS.ProcessEnv): StoreSettings {
  const redis = redisUrl(env);
  const postgres = postgresUrl(env);
  return {
    dataDir: resolve(read(env, "STEWARD_DATA_DIR") ?? "./.steward"),
    ...(redis === undefined ? {} : { redisUrl: redis }),
    ...(postgres === undefined ? {} : { postgresUrl: postgres }),
  };
}

/** STEWARD_HANDLERS as a list of paths, for commands that load handler modules and need nothing else (`steward validate`). */
export function loadHandlerPaths(env: NodeJS.ProcessEnv): string[] {
  return list(env, "STEWARD_HANDLERS");
}

/** STEWARD_BUILTIN_HANDLERS: `all` (default), `none`, or the built-in handlers' names (checked against the list when the service starts). */
export function loadBuiltinHandlers(env: NodeJS.ProcessEnv): "all" | "none" | string[] {
  const names = list(env, "STEWARD_BUILTIN_HANDLERS");
  if (names.length === 0 || (names.length === 1 && names[0] === "all")) return "all";
  if (names.length === 1 && names[0] === "none") return "none";
  const bad = names.find((n) => !/^[a-z][a-z0-9-]*$/.test(n));
  if (bad !== undefined)
    throw new ConfigError(
      "STEWARD_BUILTIN_HANDLERS",
      `has "${bad}", not a handler name (use all, none, or names such as rerun,deployments)`,
    );
  return names;
}

/** SENTRY_DSN as Sentry gives it (`https://<key>@<host>/<project id>`); never quoted back, it holds a key. */
function checkedDsn(raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !["http:", "https:"].includes(url.protocol) || !url.username || !/\/\d+$/.test(url.pathname))
    throw new ConfigError("SENTRY_DSN", "must be a Sentry DSN: https://<key>@<host>/<project id>");
  return raw;
}

/** Parse and validate the configuration; throws ConfigError (one line) on the first problem. */
export function loadConfig(env: NodeJS.ProcessEnv): StewardConfig {
  const id = appId(env);
  // Secrets next, so they are registered for redaction before anything else can fail.
  const secrets = webhookSecrets(env);
  const token = reviewerToken(env);
  const key = privateKey(env);
  const statusUrl = read(env, "STEWARD_STATUS_URL");
  const redis = redisUrl(env);
  const postgres = postgresUrl(env);
  const proxy = webhookProxyUrl(env);
  const sentryDsn = read(env, "SENTRY_DSN");
  return {
    appId: id,
    privateKey: key,
    webhookSecrets: secrets,
    webhookPath: webhookPath(env),
    port: integer(env, "PORT", 3000, 0, 65_535),
    host: host(env),
    apiUrl: apiUrl(env),
    ...loadLogSettings(env),
    dataDir: notedPath(resolve(read(env, "STEWARD_DATA_DIR") ?? "./.steward")),
    adminRepo: adminRepo(env),
    handlerPaths: loadHandlerPaths(env),
    builtinHandlers: loadBuiltinHandlers(env),
    octokitCheck: oneOf(env, "STEWARD_OCTOKIT_CHECK", ["on", "off"] as const, "on"),
    concurrency: integer(env, "STEWARD_CONCURRENCY", 8, 1, 1000),
    maxAttempts: integer(env, "STEWARD_MAX_ATTEMPTS", 5, 1, 100),
    shutdownTimeoutMs: duration(env, "STEWARD_SHUTDOWN_TIMEOUT", "25s"),
    writeIntervalMs: duration(env, "STEWARD_WRITE_INTERVAL", "1s"),
    apiTimeoutMs: duration(env, "STEWARD_API_TIMEOUT", "30s"),
    reviewerToken: token,
    syncIntervalMs: duration(env, "STEWARD_SYNC_INTERVAL", "6h"),
    redeliverIntervalMs: duration(env, "STEWARD_REDELIVER_INTERVAL", "10m"),
    statusUrl: statusUrl === undefined ? undefined : httpUrl("STEWARD_STATUS_URL", statusUrl),
    durability: oneOf(env, "STEWARD_DURABILITY", ["process", "power"] as const, "process"),
    bodyTimeoutMs: duration(env, "STEWARD_BODY_TIMEOUT", "15s"),
    bodyMinRate: integer(env, "STEWARD_BODY_MIN_RATE", 16_384, 0, 1 << 30),
    maxConnectionsPerAddress: integer(env, "STEWARD_MAX_CONNECTIONS_PER_ADDRESS", 256, 0, 1_000_000),
    ...(redis === undefined ? {} : { redisUrl: redis }),
    ...(postgres === undefined ? {} : { postgresUrl: postgres }),
    ...(proxy === undefined ? {} : { webhookProxyUrl: proxy }),
    ...(sentryDsn === undefined ? {} : { sentryDsn: checkedDsn(sentryDsn) }),
    ...oauthClient(env),
    ...reportOnly(env),
  };
}

/**
 * STEWARD_MODE (`act`, the default, or `report`: every handler) and STEWARD_REPORT_ONLY (handler
 * names): the operator's report-only switch, above every policy file.
 */
function reportOnly(env: Env): Pick<StewardConfig, "reportOnly"> {
  const mode = oneOf(env, "STEWARD_MODE", ["act", "report"] as const, "act");
  const names = list(env, "STEWARD_REPORT_ONLY");
  for (const name of names) {
    if (!/^[A-Za-z0-9_.-]+$/.test(name))
      throw new ConfigError("STEWARD_REPORT_ONLY", `must list handler names, comma-separated (got ${shown(name)})`);
  }
  if (mode === "report") return { reportOnly: ["*"] };
  return names.length ? { reportOnly: names } : {};
}
