// Authenticated API clients on Probot's Octokit (app auth via octokit-auth-probot and
// auth-app, throttling via bottleneck, retries, pagination). One Octokit per installation,
// cached, so throttling and rate-limit state are kept per installation: one busy or
// limited installation never stalls the others.
import Bottleneck from "bottleneck";
import { ProbotOctokit } from "probot";
import type { Logger } from "pino";
import type { StewardConfig } from "../config/types.js";
import type { InstallationOctokit } from "../handler.js";
import type { OctokitFactory } from "./types.js";
import { createRedirectingFetch } from "./redirects.js";
import { createTokenCache } from "./token-cache.js";
import { removeBottleneckYieldDelay } from "./bottleneck-yield.js";
import { registerSecret, scrub } from "../log/redact.js";
import { packageVersion } from "../package-root.js";

export const USER_AGENT = `steward/${packageVersion()}`;
export const ACCEPT = "application/vnd.github+json";
export const API_VERSION = "2022-11-28";

export interface ApiObserver {
  /** One HTTP exchange with the API (status 0: no response), with X-RateLimit-Remaining when sent. */
  request(installationId: number | "app", status: number, remaining?: number): void;
}

export interface OctokitFactoryOptions {
  config: StewardConfig;
  logger: Logger;
  observe?: ApiObserver;
  /**
   * Spacing of content-creating requests per installation. GitHub asks for at least one
   * second between writes; a sandbox or benchmark may lower it.
   */
  writeIntervalMs?: number;
  /** Longest wait for a primary rate limit to reset before giving up (the engine retries later). */
  maxRateLimitWaitSeconds?: number;
  /** Retries of 5xx and network errors (backoff 1 s, 4 s, 9 s, ...). */
  retries?: number;
  /** Underlying fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
  /**
   * Several replicas: throttling state (write spacing, concurrency per installation) kept in
   * Redis through Bottleneck clustering, so the replicas together stay within GitHub's limits.
   * `namespace` prefixes the limiter ids (one per deployment; tests use a unique one).
   */
  sharedThrottle?: { connection: Bottleneck.IORedisConnection; namespace?: string };
}

type Fetch = typeof globalThis.fetch;
type RetryDecision = (retryAfter: number, options: { method: string; url: string }, octokit: unknown, retryCount: number) => boolean;

/** A fetch that reports every exchange of one installation and registers the tokens it sends. */
function observedFetch(inner: Fetch, who: number | "app", observe: ApiObserver | undefined): Fetch {
  return async (input, init) => {
    const auth = new Headers(init?.headers).get("authorization");
    const token = auth && /^token\s+(\S+)$/i.exec(auth)?.[1];
    if (token) registerSecret(token);
    try {
      const response = await inner(input, init);
      const remaining = response.headers.get("x-ratelimit-remaining");
      observe?.request(who, response.status, remaining === null ? undefined : Number(remaining));
      return response;
    } catch (error) {
      observe?.request(who, 0);
      throw error;
    }
  };
}

/** Clustered limiter groups over one Redis connection; nothing (local limiters) without one. */
function sharedGroups(sharing: OctokitFactoryOptions["sharedThrottle"]) {
  if (!sharing) return { options: () => ({}), throttle: {} };
  const { connection } = sharing;
  const namespace = sharing.namespace ?? "steward";
  // Limiter state in Redis expires after two minutes unused, as Octokit's own clustered groups.
  const options = (name: string) => ({ id: `${namespace}-${name}`, connection, timeout: 120_000 });
  return {
    options,
    // The plugin's own global, auth and search groups are module-wide and bound to whichever
    // client came first; these belong to this factory and its connection.
    throttle: {
      Bottleneck,
      connection,
      global: new Bottleneck.Group({ maxConcurrent: 10, ...options("global") }),
      auth: new Bottleneck.Group({ maxConcurrent: 1, ...options("auth") }),
      search: new Bottleneck.Group({ maxConcurrent: 1, minTime: 2_000, ...options("search") }),
    },
  };
}

export function createOctokitFactory(opts: OctokitFactoryOptions): OctokitFactory {
  const { config } = opts;
  const log = opts.logger.child({ component: "api" });
  if (!removeBottleneckYieldDelay()) log.debug("bottleneck internals changed; API calls keep its 1 ms yields");
  const tokens = createTokenCache();
  const redirecting = createRedirectingFetch(opts.fetch ?? globalThis.fetch);
  const maxWait = opts.maxRateLimitWaitSeconds ?? 15 * 60;
  // Groups of this factory; each installation is a key inside them (bottleneck keyed groups).
  const writeInterval = opts.writeIntervalMs ?? 1_000;
  const shared = sharedGroups(opts.sharedThrottle);
  const write = new Bottleneck.Group({ maxConcurrent: 1, minTime: writeInterval, ...shared.options("write") });
  // Writes that notify people (issues, comments) get three times the spacing, as Octokit does.
  const notifications = new Bottleneck.Group({ maxConcurrent: 1, minTime: writeInterval * 3, ...shared.options("notifications") });

  const onRateLimit: RetryDecision = (retryAfter, options, _octokit, retryCount) => {
    const retry = retryAfter <= maxWait && retryCount < 3;
    log.warn({ method: options.method, url: scrub(options.url), retryAfter, retry }, "primary rate limit reached");
    return retry;
  };
  const onSecondaryRateLimit: RetryDecision = (retryAfter, options, _octokit, retryCount) => {
    const retry = retryAfter <= maxWait && retryCount < 3;
    log.warn({ method: options.method, url: scrub(options.url), retryAfter, retry }, "secondary rate limit reached");
    return retry;
  };

  function build(who: number | "app"): InstallationOctokit {
    const auth: Record<string, unknown> = { appId: config.appId, privateKey: config.privateKey, cache: tokens };
    if (who !== "app") auth.installationId = who;
    const octokit = new ProbotOctokit({
      auth,
      baseUrl: config.apiUrl,
      userAgent: USER_AGENT,
      log: log.child({ installationId: who }),
      request: { fetch: observedFetch(redirecting.fetch, who, opts.observe) },
      retry: { retries: opts.retries ?? 3 },
      throttle: {
        id: `steward-${who}`,
        write,
        notifications,
        onRateLimit,
        onSecondaryRateLimit,
        ...shared.throttle,
      },
    }) as InstallationOctokit;
    octokit.hook.before("request", (options) => {
      // Octokit's default is the v3 media type; the current one is vnd.github+json.
      if (!options.headers.accept || options.headers.accept === "application/vnd.github.v3+json") {
        options.headers.accept = ACCEPT;
      }
      (options.headers as Record<string, string>)["x-github-api-version"] ??= API_VERSION;
      // A POST creates: when its answer is lost the creation may have happened, and a blind
      // retry would make a second one. The engine's retry (with ctx.once's `check`) decides instead.
      // The installation-token POST is exempt: a second token is harmless.
      const request = ((options as { request?: { retries?: number } }).request ??= {});
      if (options.method === "POST" && request.retries === undefined && !/\/access_tokens$/.test(String(options.url))) request.retries = 0;
    });
    return octokit;
  }

  const installations = new Map<number, InstallationOctokit>();
  let app: InstallationOctokit | undefined;
  return {
    async octokitFor(installationId) {
      if (!Number.isSafeInteger(installationId) || installationId < 1) {
        throw new Error(`not an installation id: ${String(installationId)}`);
      }
      let octokit = installations.get(installationId);
      if (!octokit) {
        octokit = build(installationId);
        installations.set(installationId, octokit);
      }
      return octokit;
    },
    async appOctokit() {
      app ??= build("app");
      return app;
    },
  };
}

/**
 * Download a document at `url` without any credential: for a log or artifact redirect to
 * another host (the signed URL is the credential; sending the installation token along
 * would leak it). Handlers read the Location with `request: { redirect: "manual" }` first.
 */
export async function downloadWithoutAuth(url: string, opts: { fetch?: Fetch; maxBytes?: number } = {}): Promise<string> {
  const target = new URL(url);
  if (target.protocol !== "https:" && target.protocol !== "http:") throw new Error(`cannot download ${target.protocol} URLs`);
  const response = await (opts.fetch ?? globalThis.fetch)(target, { redirect: "follow", headers: { "user-agent": USER_AGENT } });
  // The query string of a signed URL is a credential: never put it in a message.
  const where = `${target.origin}${target.pathname}`;
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`download of ${where} failed with HTTP ${response.status}`);
  }
  const maxBytes = opts.maxBytes ?? 64 * 1024 * 1024;
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new Error(`download of ${where} is larger than ${maxBytes} bytes`);
  }
  const text = await response.text();
  if (Buffer.byteLength(text) > maxBytes) throw new Error(`download of ${where} is larger than ${maxBytes} bytes`);
  return text;
}
