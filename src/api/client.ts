// Authenticated API clients on Steward's Octokit (octokit.ts: app auth via octokit-auth-probot and
// auth-app, throttling via bottleneck, pagination; retries in retry.ts). One Octokit per installation,
// cached, so throttling and rate-limit state are kept per installation: one busy or
// limited installation never stalls the others.
import Bottleneck from "bottleneck";
import { StewardOctokit } from "./octokit.js";
import type { Logger } from "pino";
import type { StewardConfig } from "../config/types.js";
import type { ClientCoordination, InstallationOctokit, OctokitFactory, WriteSlots } from "./types.js";
import { createRedirectingFetch, type RedirectingFetch } from "./redirects.js";
import { retryFailedRequests } from "./retry.js";
import { removeBottleneckYieldDelay } from "./bottleneck-yield.js";
import { registerSecret, scrub } from "../log/redact.js";
import { currentSignal, stoppedError, stopsHere } from "../lifecycle/abort-scope.js";
import { abortableFetch } from "./request-abort.js";
import { packageVersion } from "../package-root.js";
import { createHttpFetch } from "./http-fetch.js";
import { currentApiCallSink, routeOf } from "./call-scope.js";
import { keepRecent } from "../lifecycle/recently-used.js";
import { createConcurrencyGroup, createRetryLimiter } from "./local-limiters.js";

export const USER_AGENT = `steward/${packageVersion()}`;
export const ACCEPT = "application/vnd.github+json";
export const API_VERSION = "2022-11-28";
export const DEFAULT_API_TIMEOUT_MS = 30_000;

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
  /** Underlying fetch (tests, proxies). Default: node:http(s) with kept-alive connections (http-fetch.ts). */
  fetch?: typeof globalThis.fetch;
  /** Write slots, the token cache and shared throttling: this process's own, or shared by replicas (src/coordination/). */
  coordination: ClientCoordination;
  /**
   * The process's hard stop: once it fired no request leaves (queued ones included) and those
   * in flight are aborted. The softer stop of one piece of work is its own signal (see below).
   */
  signal?: AbortSignal;
  /**
   * Longest wait for the answer to one request (its headers, and its body when read whole: up to 8 MiB), ms; 0: none. Default 30 s
   * (STEWARD_API_TIMEOUT). A request past it fails like a network error (request-abort.ts).
   */
  timeoutMs?: number;
  /**
   * Installations whose clients are kept for the next request (default 500), the most recently
   * used. A client let go is built again when its installation next needs one: throttling state
   * (keyed by installation in Bottleneck's groups), write slots and tokens live outside it, and
   * work already holding it goes on using it.
   */
  maxInstallations?: number;
}

/** Installation clients kept by default: more than an organisation-installed app usually serves at once, bounded for one installed everywhere. */
export const DEFAULT_MAX_INSTALLATIONS = 500;

type Fetch = typeof globalThis.fetch;
type RetryDecision = (retryAfter: number, options: { method: string; url: string }, octokit: unknown, retryCount: number) => boolean;

/** The Authorization header of a request: Octokit's are a plain object with lower-case names (no Headers built for it). */
function authorizationOf(headers: RequestInit["headers"]): string | null {
  if (!headers) return null;
  if (headers instanceof Headers || Array.isArray(headers)) return new Headers(headers).get("authorization");
  const plain = headers as Record<string, string>;
  if (typeof plain.authorization === "string") return plain.authorization;
  const name = Object.keys(plain).find((k) => k.toLowerCase() === "authorization");
  return name === undefined ? null : plain[name]!;
}

/** A fetch that reports every exchange of one installation and registers the tokens it sends. */
function observedFetch(inner: Fetch, who: number | "app", observe: ApiObserver | undefined): Fetch {
  return async (input, init) => {
    const auth = authorizationOf(init?.headers);
    const token = auth && /^token\s+(\S+)$/i.exec(auth)?.[1];
    if (token) registerSecret(token, { rotating: true });
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

// Token mints and OAuth token exchanges are not content writes (the throttling plugin's auth requests).
const AUTH_PATHS = [/^\/app\/installations\/[^/]+\/access_tokens$/, /^\/applications\/[^/]+\/token(\/scoped)?$/, /^\/login\/oauth\/access_token$/];

/**
 * Writes that answer something waiting on GitHub's side (a failed run to re-run, a deployment
 * waiting for its review or its protection rule): they go ahead of the installation's reports
 * (check runs, statuses) and sync writes queued in this process, which nobody waits on.
 */
// Matched on the route as the hook sees it: a template (`.../runs/{run_id}/rerun`) or a full URL.
const ANSWERS = /\/actions\/(?:runs\/[^/]+\/(?:rerun|rerun-failed-jobs|deployment_protection_rule|pending_deployments)|jobs\/[^/]+\/rerun)$/;

/**
 * One write of an installation at a time, the next no sooner than the spacing interval after
 * the previous one was answered (GitHub measures the spacing between the requests it receives,
 * so the turn must cover the whole exchange: however late a replica sends, the next write
 * waits for its answer). Wrapped around everything the Octokit plugins do for the request
 * (throttling's limiters, retries, authentication), so a write waiting for its turn holds none
 * of their slots; a token mint inside a write passes through.
 */
function spaceWrites(octokit: InstallationOctokit, who: string, slots: WriteSlots, gapMs: number, hardStop: AbortSignal | undefined): void {
  octokit.hook.wrap("request", (request, options) => {
    const method = options.method.toUpperCase();
    if (method === "GET" || method === "HEAD") return request(options);
    const { pathname } = new URL(options.url, "http://github.test");
    if (AUTH_PATHS.some((p) => p.test(pathname))) return request(options);
    // Stopped work gives up its place in the queue (a caller's own `request.signal` counts too).
    const own = (options.request as RequestOptions | undefined)?.signal;
    return slots.run(who, async () => request(options), { gapMs, first: ANSWERS.test(pathname), stops: stopsHere(hardStop, own) });
  });
}

/**
 * Reports each request made inside a recording scope (a handler's run) to it: method, route
 * template, status and how long the handler waited for it (write spacing and retries included).
 */
function recordCalls(octokit: InstallationOctokit): void {
  octokit.hook.wrap("request", async (request, options) => {
    const sink = currentApiCallSink();
    if (!sink) return request(options);
    const started = performance.now();
    const report = (status: number) =>
      sink({ method: options.method.toUpperCase(), route: routeOf(options.url), status, ms: Math.round(performance.now() - started) });
    try {
      const response = await request(options);
      report(response.status);
      return response;
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      report(typeof status === "number" ? status : 0);
      throw error;
    }
  });
}

// Liveness of the clustered limiters. Bottleneck counts a job as running in Redis from the
// moment it is registered until its client frees it; a client that dies in between (kill -9)
// never frees it. `clientTimeout` does not help: Bottleneck drops an unresponsive client
// only once it runs nothing, it never takes its running jobs back. What takes them back is
// the job `expiration` (the throttling plugin sets 60 s on every clustered job, hence a
// minute-long freeze of the installation's writes). The notification slot is a no-op job
// that only waits for its turn (at most one spacing interval), and its spacing is the
// `nextRequest` time written atomically at registration, so a short expiration frees a dead
// holder's slot quickly without letting two notifying writes start closer than the
// interval. A frequent heartbeat (which runs Bottleneck's tick and broadcasts the freed
// capacity) and a short client timeout (so a dead client is not offered that capacity
// first) make the survivors notice within about a second. The write slot itself is a Redis
// lease (redis-write-slots.ts), which Bottleneck cannot be.
/** Slack beyond the spacing wait before a slot of a dead holder is taken back. */
export const SLOT_EXPIRY_SLACK_MS = 2_000;
const HEARTBEAT_MS = 1_000;
const CLIENT_TIMEOUT_MS = 3 * HEARTBEAT_MS;

/** Every job of `group`'s limiters expires `ms` after its registration, whatever the caller asked. */
function expireSlotsAfter(group: Bottleneck.Group, ms: number, clustered: boolean): Bottleneck.Group {
  // Local slots die with their process: nothing to take back, and unexpiring jobs keep the fast path (bottleneck-yield.ts).
  if (!clustered) return group;
  group.on("created", (limiter: Bottleneck) => {
    const schedule = limiter.schedule.bind(limiter) as (...args: unknown[]) => Promise<unknown>;
    (limiter as unknown as { schedule: (...args: unknown[]) => Promise<unknown> }).schedule = (...args: unknown[]) =>
      typeof args[0] === "function" ? schedule({ expiration: ms }, ...args) : schedule({ ...(args[0] as object), expiration: ms }, ...args.slice(1));
  });
  return group;
}

/**
 * The throttling plugin's write group, which has nothing left to do: every write already took its
 * turn in spaceWrites. The plugin only asks it `key(id).schedule(options, noop)` before each write;
 * an empty Bottleneck group would still run a job through its queue for that (about a fifth of a
 * millisecond a write, on the path from a decision to its answer).
 */
function passThroughGroup(): Bottleneck.Group {
  const limiter = { schedule: (...args: unknown[]) => {
    const fn = args.find((a): a is (...rest: unknown[]) => unknown => typeof a === "function")!;
    return Promise.resolve().then(() => fn(...args.slice(args.indexOf(fn) + 1)));
  } };
  return { key: () => limiter } as unknown as Bottleneck.Group;
}

/** Clustered limiter groups over one Redis connection; nothing (local limiters) without one. */
function sharedGroups(sharing: ClientCoordination["throttling"]) {
  if (!sharing) return { options: () => ({}), slots: () => ({}), throttle: {} };
  const { connection, namespace } = sharing;
  // Limiter state in Redis expires after two minutes unused, as Octokit's own clustered groups.
  const options = (name: string) => ({ id: `${namespace}-${name}`, connection, timeout: 120_000 });
  return {
    options,
    slots: (name: string) => ({ ...options(name), heartbeatInterval: HEARTBEAT_MS, clientTimeout: CLIENT_TIMEOUT_MS }),
    // The plugin's own global, auth and search groups are module-wide and bound to whichever
    // client came first; these belong to this factory and its connection.
    throttle: {
      Bottleneck,
      connection,
      global: new Bottleneck.Group({ maxConcurrent: 10, ...options("global") }),
      // Token mints stay per process: replicas share minted tokens (shared-token-cache.ts,
      // one minter at a time through a lease), and a clustered slot held by a dead minter
      // stalled every request of the installation for a minute.
      auth: new Bottleneck.Group({ maxConcurrent: 1 }),
      search: new Bottleneck.Group({ maxConcurrent: 1, minTime: 2_000, ...options("search") }),
    },
  };
}

interface RequestOptions {
  signal?: AbortSignal;
  fetch?: Fetch;
}

/**
 * A request made by work that was told to stop (its signal given as `request.signal`, or the
 * signal of the work running in this async context) is refused: now, and again at the moment
 * it would leave (it may wait in the write queue meanwhile). One already sent is not cut off
 * by this signal: its answer is what lets the work record what it did.
 */
function refuseOnceStopped(request: RequestOptions): void {
  const stop = request.signal ?? currentSignal();
  delete request.signal;
  if (!stop) return;
  if (stop.aborted) throw stoppedError(stop);
  const send = request.fetch ?? globalThis.fetch;
  request.fetch = (input, init) => (stop.aborted ? Promise.reject(stoppedError(stop)) : send(input, init));
}

export function createOctokitFactory(opts: OctokitFactoryOptions): OctokitFactory {
  const { config } = opts;
  const log = opts.logger.child({ component: "api" });
  if (!removeBottleneckYieldDelay()) log.debug("bottleneck internals changed; API calls keep its 1 ms yields");
  const { writeSlots, tokens, throttling } = opts.coordination;
  // One abortable fetch for the whole factory: the hard stop has one listener, however many requests are in flight.
  const abortable = abortableFetch(opts.fetch ?? createHttpFetch().fetch, { hardStop: opts.signal, timeoutMs: opts.timeoutMs ?? config.apiTimeoutMs ?? DEFAULT_API_TIMEOUT_MS });
  const redirecting = createRedirectingFetch(abortable);
  const maxWait = opts.maxRateLimitWaitSeconds ?? 15 * 60;
  // Groups of this factory; each installation is a key inside them (bottleneck keyed groups).
  const writeInterval = opts.writeIntervalMs ?? 1_000;
  const shared = sharedGroups(throttling);
  // Every write takes its turn in spaceWrites, around the whole exchange; the plugin's own write group only passes through.
  const passThrough = passThroughGroup();
  // At most ten requests of an installation in flight, as the plugin's own group; in one process a counter (local-limiters.ts).
  const local = throttling ? {} : { global: createConcurrencyGroup(10) };
  // Writes that notify people (issues, comments) get three times the spacing, as Octokit does.
  const notifications = expireSlotsAfter(
    new Bottleneck.Group({ maxConcurrent: 1, minTime: writeInterval * 3, ...shared.slots("notifications") }),
    writeInterval * 3 + SLOT_EXPIRY_SLACK_MS,
    throttling !== undefined,
  );

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
    const octokit = new StewardOctokit({
      auth,
      baseUrl: config.apiUrl,
      userAgent: USER_AGENT,
      log: log.child({ installationId: who }),
      request: { fetch: observedFetch(redirecting.fetch, who, opts.observe) },
      // The plugin's retries are replaced by retryFailedRequests below (the same rules, no limiter per request).
      retry: { enabled: false },
      throttle: {
        id: `steward-${who}`,
        write: passThrough,
        notifications,
        onRateLimit,
        onSecondaryRateLimit,
        // The plugin's retry limiter is its own per client and never clustered: a retry loop will do.
        // (Options the plugin reads but does not declare.)
        ...({ retryLimiter: createRetryLimiter(opts.signal), ...local } as object),
        ...shared.throttle,
      },
    }) as InstallationOctokit;
    // The first of this client's hooks, so the innermost of them: a retry passes through the
    // throttling and authentication again, not through the hooks below.
    retryFailedRequests(octokit, { retries: opts.retries ?? 3, signal: opts.signal });
    octokit.hook.before("request", (options) => {
      // Octokit's default is the v3 media type; the current one is vnd.github+json.
      if (!options.headers.accept || options.headers.accept === "application/vnd.github.v3+json") {
        options.headers.accept = ACCEPT;
      }
      (options.headers as Record<string, string>)["x-github-api-version"] ??= API_VERSION;
      // Without the caller's own, `options.request` is this Octokit's defaults object: what one
      // request sets here (its stop check, no retries) goes on a copy, or every later request
      // would inherit it (and the stop checks would pile up).
      const request = (options.request = { ...options.request }) as RequestOptions & { retries?: number };
      refuseOnceStopped(request);
      // A POST creates: when its answer is lost the creation may have happened, and a blind
      // retry would make a second one. The engine's retry (with ctx.once's `check`) decides instead.
      // The installation-token POST is exempt: a second token is harmless.
      if (options.method === "POST" && request.retries === undefined && !/\/access_tokens$/.test(String(options.url))) request.retries = 0;
    });
    spaceWrites(octokit, String(who), writeSlots, writeInterval, opts.signal);
    recordCalls(octokit);
    return octokit;
  }

  const installations = new Map<number, InstallationOctokit>();
  const maxInstallations = Math.max(1, opts.maxInstallations ?? DEFAULT_MAX_INSTALLATIONS);
  let app: InstallationOctokit | undefined;
  return {
    async octokitFor(installationId) {
      if (!Number.isSafeInteger(installationId) || installationId < 1) {
        throw new Error(`not an installation id: ${String(installationId)}`);
      }
      // Each client holds ~14 KB and its plugins' state, and installations come and go over a
      // process's life: the ones used last are kept.
      const octokit = installations.get(installationId) ?? build(installationId);
      keepRecent(installations, installationId, octokit, maxInstallations);
      return octokit;
    },
    async appOctokit() {
      app ??= build("app");
      return app;
    },
  };
}

/** The downloads' transport (a re-run's log is on its path), redirects followed by the client's own rules. */
let downloading: RedirectingFetch | undefined;
const downloads = () => (downloading ??= createRedirectingFetch(createHttpFetch().fetch));

/**
 * Download a document at `url` without any credential: for a log or artifact redirect to
 * another host (the signed URL is the credential; sending the installation token along
 * would leak it). Handlers read the Location with `request: { redirect: "manual" }` first.
 */
export async function downloadWithoutAuth(url: string, opts: { fetch?: Fetch; maxBytes?: number } = {}): Promise<string> {
  const target = new URL(url);
  if (target.protocol !== "https:" && target.protocol !== "http:") throw new Error(`cannot download ${target.protocol} URLs`);
  const response = await (opts.fetch ?? downloads().fetch)(target.href, { redirect: "follow", headers: { "user-agent": USER_AGENT } });
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
  // Read chunk by chunk: a body without Content-Length (chunked) is cut off at the bound, never
  // buffered whole first.
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body?.getReader();
  for (;;) {
    const next = await reader?.read();
    if (!next || next.done) break;
    total += next.value.byteLength;
    if (total > maxBytes) {
      await reader!.cancel();
      throw new Error(`download of ${where} is larger than ${maxBytes} bytes`);
    }
    chunks.push(next.value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
