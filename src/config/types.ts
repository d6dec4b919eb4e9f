// The service configuration, parsed from the environment by `src/config/env.ts`.

export interface StewardConfig {
  appId: number;
  /** PEM. A secret: never logged. */
  privateKey: string;
  /** One or more secrets; any one verifies (rotation without downtime). Secrets: never logged. */
  webhookSecrets: string[];
  webhookPath: string;
  port: number;
  host: string | undefined;
  /** REST base URL without a trailing slash, e.g. https://api.github.com or https://ghe.example/api/v3. */
  apiUrl: string;
  logLevel: "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";
  logFormat: "json" | "pretty";
  dataDir: string;
  adminRepo: string;
  /** Extra handler module paths (STEWARD_HANDLERS, comma-separated). */
  handlerPaths: string[];
  /**
   * Which built-in handlers run (STEWARD_BUILTIN_HANDLERS: `all`, the default, `none`, or names
   * such as `rerun,deployments`). Optional so hand-built configs may omit it; absent means all.
   */
  builtinHandlers?: "all" | "none" | string[];
  /**
   * Whether hosted modules are read for Octokit 15/16 method names at load and refused when they
   * call one (STEWARD_OCTOKIT_CHECK, `on` by default). Optional so hand-built configs may omit it.
   */
  octokitCheck?: "on" | "off";
  /** Worker pool size. */
  concurrency: number;
  /** Handler attempts before a delivery is parked as dead. */
  maxAttempts: number;
  /** Graceful shutdown bound, ms. */
  shutdownTimeoutMs: number;
  /** A webhook body must arrive whole within this (STEWARD_BODY_TIMEOUT, default 15 s). */
  bodyTimeoutMs?: number;
  /** Bytes a second a webhook body must arrive at after a 2 s grace (STEWARD_BODY_MIN_RATE, default 16384; 0: no floor). */
  bodyMinRate?: number;
  /** Connections one address (an IPv6 /64) may hold open (STEWARD_MAX_CONNECTIONS_PER_ADDRESS, default 256; 0: no cap). */
  maxConnectionsPerAddress?: number;
  /**
   * Spacing of writes per installation, ms (STEWARD_WRITE_INTERVAL; GitHub asks for about one
   * second). Optional so hand-built configs may omit it; absent means 1 s.
   */
  writeIntervalMs?: number;
  /**
   * Longest wait for the answer to one API request, ms (STEWARD_API_TIMEOUT, default 30 s; 0:
   * none). Optional so hand-built configs may omit it; absent means 30 s.
   */
  apiTimeoutMs?: number;
  /** Token of a required reviewer for pending-deployment reviews (secret). */
  reviewerToken: string | undefined;
  /** Interval of the scheduled secrets sync, ms. */
  syncIntervalMs: number;
  /** Interval of the redelivery sweeper, ms. */
  redeliverIntervalMs: number;
  /** Public URL of Steward's status page, used as check runs' details_url. */
  statusUrl: string | undefined;
  /** SENTRY_DSN: where errors are reported (ops/error-reporting.ts); none when unset. */
  sentryDsn?: string;
  /**
   * What a recorded delivery must survive before the intake answers: `process` (a crash of
   * Steward; SQLite synchronous=NORMAL in WAL) or `power` (power loss; synchronous=FULL).
   * Optional so hand-built configs (tests) may omit it; absent means `process`.
   */
  durability?: "process" | "power";
  /**
   * STEWARD_REDIS_URL: when set, the queue, tasks, handler state and the replicas' coordination
   * (write slots, tokens, registry) live in this Redis (shared by several replicas) instead of
   * SQLite; with STEWARD_POSTGRES_URL also set, Redis is not used. May hold a password: a
   * secret, never logged.
   */
  redisUrl?: string;
  /**
   * STEWARD_POSTGRES_URL: when set, the queue, tasks, handler state and the replicas'
   * coordination (write slots, tokens, registry) live in this PostgreSQL; Redis, if also set,
   * is not used (docs/decisions/0013). May hold a password: a secret, never logged.
   */
  postgresUrl?: string;
  /** The app's OAuth client (GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET): the console's sign-in. Absent: console off. */
  oauth?: { clientId: string; clientSecret: string };
  /** WEBHOOK_PROXY_URL: a smee-style Server-Sent Events channel whose deliveries are forwarded to the webhook path. A secret (its path is the channel's key). */
  webhookProxyUrl?: string;
  /** STEWARD_SESSION_SECRET: keys the console's session cookies; derived from the app's secrets when absent. */
  sessionSecret?: string;
  /**
   * Handlers that decide, record and report but make no acting write, whatever their policy
   * says: `["*"]` for every handler (STEWARD_MODE=report), else the names STEWARD_REPORT_ONLY
   * lists. Optional so hand-built configs may omit it; absent means every handler acts.
   */
  reportOnly?: readonly string[];
}

/** Where the service keeps its state: what operator commands need to open the same store. */
export type StoreSettings = Pick<StewardConfig, "dataDir" | "redisUrl" | "postgresUrl">;
