// The names of Steward's own settings. A secrets policy may never resolve one of them as a source
// (`env:WEBHOOK_SECRET`, `env:STEWARD_REVIEWER_TOKEN`, ...), whatever the operator exposes: the
// static list covers the settings known when this was written, and every name `loadConfig` reads
// is noted at run time, so a setting added later is protected without touching this file.

const KNOWN = [
  "APP_ID",
  "PRIVATE_KEY",
  "PRIVATE_KEY_PATH",
  "WEBHOOK_SECRET",
  "WEBHOOK_PATH",
  "GITHUB_API_URL",
  "GHE_HOST",
  "GHE_PROTOCOL",
  "HOST",
  "PORT",
  "LOG_LEVEL",
  "LOG_FORMAT",
  "STEWARD_ADMIN_REPO",
  "STEWARD_REVIEWER_TOKEN",
  "STEWARD_REDIS_URL",
  "STEWARD_POSTGRES_URL",
  "STEWARD_STATUS_URL",
  "STEWARD_DATA_DIR",
  "STEWARD_HANDLERS",
  "STEWARD_BUILTIN_HANDLERS",
  "STEWARD_CONCURRENCY",
  "STEWARD_MAX_ATTEMPTS",
  "STEWARD_SHUTDOWN_TIMEOUT",
  "STEWARD_SYNC_INTERVAL",
  "STEWARD_REDELIVER_INTERVAL",
  "STEWARD_DURABILITY",
  "STEWARD_SECRET_SOURCES",
  "STEWARD_BODY_TIMEOUT",
  "STEWARD_API_TIMEOUT",
  "WEBHOOK_PROXY_URL",
  "SENTRY_DSN",
  "STEWARD_MODE",
  "STEWARD_REPORT_ONLY",
];

const names = new Set<string>(KNOWN);

/** Called by the configuration loader for every variable it reads. */
export function noteSettingName(name: string): void {
  names.add(name.toUpperCase());
}

/** Whether `name` is (case-insensitively) one of Steward's own settings. */
export function isSettingName(name: string): boolean {
  return names.has(name.toUpperCase());
}

const paths = new Set<string>();

/** Files and directories that hold Steward's credentials or state (the key file, the data directory). */
export function noteSettingPath(path: string): void {
  paths.add(path);
}

/** The noted paths (a source must not resolve to one of them or below one). */
export function settingPaths(): string[] {
  return [...paths];
}

/** Every known setting name (for documentation and tests). */
export function settingNames(): string[] {
  return [...names].sort();
}
