// Authenticated API clients on Steward's Octokit (octokit.ts: the plugins Probot composes, with
// Probot's app authentication). One Octokit per installation, cached, so throttling and
// rate-limit state are kept per installation: one busy or limited installation never stalls
// the others. What the plugins do not do is composed around them here: the write slots (one
// content-creating request of an installation at a time, spaced from the previous answer, across
// replicas), the stop signal of the work that made a request, call recording for the console,
// and the count of every exchange for /metrics. What they need from outside (write slots, the
// token cache) comes in as `coordination` (types.ts).
//
// Throttling (at most ten requests of an installation in flight, rate-limit waits) is each
// process's own. The plugin's Redis clustering was tried for replicas: it keeps a killed
// replica's requests counted for a minute (the fixed expiration it gives every clustered job),
// which stalled the installation on every replica in the kill -9 replica test. What must hold
// across replicas, one write at a time and spaced, is the write slot's, which a dead holder
// frees within seconds.
import Bottleneck from "bottleneck";
import { throttling } from "@octokit/plugin-throttling";
import type { Logger } from "pino";
import { StewardOctokit } from "./octokit.js";
import type { StewardConfig } from "../config/types.js";
import type { ClientCoordination, InstallationOctokit, OctokitFactory, WriteSlots } from "./types.js";
import { createRedirectingFetch } from "./redirects.js";
import { registerSecret, scrub } from "../log/redact.js";
import {
  currentSignal,
  runWithSignal,
  stoppableDelay,
  stoppedError,
  stopsHere,
  throwIfAnyStopped,
} from "../lifecycle/abort-scope.js";
import { abortableFetch } from "./request-abort.js";
import { BudgetReserve, isActing, isAnswer } from "./budget-reserve.js";
import { packageVersion } from "../package-root.js";
import { currentApiCallSink, routeOf } from "./call-scope.js";
import { keepRecent } from "../lifecycle/recently-used.js";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { tracer } from "../log/trace.js";

export const USER_AGENT = `steward/${packageVersion()}`;
export const ACCEPT = "application/vnd.github+json";
export const API_VERSION = "2022-11-28";
export const DEFAULT_API_TIMEOUT_MS = 30_000;
/** A worker holds a rate-limited request this long at most; longer waits go back to the queue. */
export const DEFAULT_MAX_RATE_LIMIT_WAIT_SECONDS = 10;

export interface ApiObserver {
  /**
   * One HTTP exchange with the API (status 0: no response), with X-RateLimit-Remaining when sent,
   * and X-RateLimit-Limit and -Reset (epoch milliseconds) when sent too.
   */
  request(
    installationId: number | "app",
    status: number,
    remaining?: number,
    window?: { limit?: number; resetAt?: number },
  ): void;
}

export interface OctokitFactoryOptions {
  config: StewardConfig;
  logger: Logger;
  /** Write slots and the token cache: this process's own, or shared by replicas (src/coordination/). */
  coordination: ClientCoordination;
  observe?: ApiObserver;
  /**
   * Spacing of content-creating requests per installation, from the previous one's answer; three
   * times as long after one that notifies people (as Octokit's throttling does). GitHub asks for
   * at least one second between writes; a sandbox or benchmark may lower it.
   */
  writeIntervalMs?: number;
  /** Longest wait in the request for a rate limit to lift, seconds (default 10); past it the engine retries at the reset. */
  maxRateLimitWaitSeconds?: number;
  /** Retries of 5xx and network errors (backoff 1 s, 4 s, 9 s, ...: the retry plugin's). */
  retries?: number;
  /** Underlying fetch (tests, proxies). Default: Node's. */
  fetch?: typeof globalThis.fetch;
  /**
   * The process's hard stop: once it fired no request leaves (queued ones included) and those
   * in flight are aborted. The softer stop of one piece of work is its own signal (see below).
   */
  signal?: AbortSignal;
  /**
   * Longest wait for the answer's headers to one request, ms; 0: none. Default 30 s
   * (STEWARD_API_TIMEOUT). A request past it fails like a network error (request-abort.ts).
   */
  timeoutMs?: number;
  /**
   * Installations whose clients are kept for the next request (default 500), the most recently
   * used. A client let go is built again when its installation next needs one: throttling state
   * (keyed by installation in the plugin's groups), write slots and tokens live outside it, and
   * work already holding it goes on using it.
   */
  maxInstallations?: number;
}

/** Installation clients kept by default: more than an organisation-installed app usually serves at once, bounded for one installed everywhere. */
export const DEFAULT_MAX_INSTALLATIONS = 500;

type Fetch = typeof globalThis.fetch;

/** The Authorization header of a request: Octokit's are a plain object with lower-case names. */
function authorizationOf(headers: RequestInit["headers"]): string | null {
  if (!headers) return null;
  if (headers instanceof Headers || Array.isArray(headers)) return new Headers(headers).get("authorization");
  const plain = headers as Record<string, string>;
  if (typeof plain.authorization === "string") return plain.authorization;
  const name = Object.keys(plain).find((k) => k.toLowerCase() === "authorization");
  return name === undefined ? null : plain[name]!;
}

/** A fetch that reports every exchange of one installation and registers the tokens it sends. */
function observedFetch(
  inner: Fetch,
  who: number | "app",
  observe: ApiObserver | undefined,
  reserve: BudgetReserve,
): Fetch {
  return async (input, init) => {
    const auth = authorizationOf(init?.headers);
    const token = auth && /^token\s+(\S+)$/i.exec(auth)?.[1];
    if (token) registerSecret(token, { rotating: true });
    try {
      const response = await inner(input, init);
      // One reading of the window for the hold and for the console (its reset on this machine's clock).
      const window = reserve.observe(response.headers);
      observe?.request(who, response.status, window?.remaining, {
        ...(window?.limit !== undefined ? { limit: window.limit } : {}),
        ...(window ? { resetAt: window.resetAt } : {}),
      });
      return response;
    } catch (error) {
      observe?.request(who, 0);
      throw error;
    }
  };
}

// Token mints and OAuth token exchanges are not content writes (the throttling plugin's auth requests).
const AUTH_PATHS = [
  /^\/app\/installations\/[^/]+\/access_tokens$/,
  /^\/applications\/[^/]+\/token(\/scoped)?$/,
  /^\/login\/oauth\/access_token$/,
];

/** A request's path, whether its url is a route (`/repos/o/r`) or a full URL. */
function pathOf(url: string): string {
  return new URL(url, "http://github.test").pathname;
}

/** Whether a path mints or exchanges a token (never spaced nor held: acting needs a token). */
function isTokenRequest(pathname: string): boolean {
  return AUTH_PATHS.some((p) => p.test(pathname));
}

/**
 * One write of an installation at a time, the next no sooner than the interval after the
 * previous one was answered (GitHub measures the spacing between the requests it receives, so
 * the turn covers the whole exchange: however late a replica sends, the next write waits for
 * its answer). Wrapped around everything the plugins do for the request (throttling, retries,
 * authentication), so a write waiting for its turn holds none of their slots; a token mint
 * inside a write passes through.
 */
function spaceWrites(
  octokit: InstallationOctokit,
  who: string,
  slots: WriteSlots,
  intervalMs: number,
  hardStop: AbortSignal | undefined,
): void {
  octokit.hook.wrap("request", (request, options) => {
    const method = options.method.toUpperCase();
    if (method === "GET" || method === "HEAD") return request(options);
    const pathname = pathOf(options.url);
    if (isTokenRequest(pathname)) return request(options);
    const gapMs = throttling.triggersNotification(pathname) ? intervalMs * 3 : intervalMs;
    // Stopped work gives up its place in the queue (a caller's own `request.signal` counts too).
    const own = (options.request as RequestOptions | undefined)?.signal;
    return slots.run(who, async () => request(options), {
      gapMs,
      first: isAnswer(pathname),
      stops: stopsHere(hardStop, own),
    });
  });
}

/**
 * Refuses, before any limiter or write slot, a request the installation's budget cannot spend on
 * it now (budget-reserve.ts). Token mints are never held: acting needs a token.
 */
function holdForReserve(octokit: InstallationOctokit, reserve: BudgetReserve): void {
  octokit.hook.wrap("request", async (request, options) => {
    const pathname = pathOf(options.url);
    if (isTokenRequest(pathname)) return request(options);
    const held = reserve.hold(isActing(options.method, pathname));
    if (held) throw held;
    return request(options);
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
      sink({
        method: options.method.toUpperCase(),
        route: routeOf(options.url),
        status,
        ms: Math.round(performance.now() - started),
      });
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

/** X-RateLimit-Remaining of an answer (Octokit's headers are lower-case), when it was sent. */
function remainingOf(headers: unknown): number | undefined {
  const value = (headers as Record<string, unknown> | undefined)?.["x-ratelimit-remaining"];
  const n = typeof value === "string" || typeof value === "number" ? Number(value) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

/**
 * One span per request as the work that made it sees it (write spacing, rate-limit waits and
 * retries inside it), named by its method and route template. Only the template, the status and
 * the rate limit left are kept: never the URL's values, a header or a body.
 */
function traceCalls(octokit: InstallationOctokit, who: number | "app", server: string): void {
  octokit.hook.wrap("request", async (request, options) => {
    const method = options.method.toUpperCase();
    const route = routeOf(options.url);
    return tracer.startActiveSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "http.request.method": method,
          "url.template": route,
          "server.address": server,
          "github.installation": String(who),
        },
      },
      async (span) => {
        const answered = (status: number, headers: unknown) => {
          if (status > 0) span.setAttribute("http.response.status_code", status);
          const remaining = remainingOf(headers);
          if (remaining !== undefined) span.setAttribute("github.ratelimit.remaining", remaining);
        };
        try {
          const response = await request(options);
          answered(response.status, response.headers);
          return response;
        } catch (error) {
          const { status, response } = error as { status?: unknown; response?: { headers?: unknown } };
          answered(typeof status === "number" ? status : 0, response?.headers);
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.setAttribute("error.type", typeof status === "number" && status > 0 ? String(status) : "no response");
          throw error;
        } finally {
          span.end();
        }
      },
    );
  });
}

interface RequestOptions {
  signal?: AbortSignal;
  fetch?: Fetch;
  retries?: number;
}

/**
 * The stop of the work that made a request: its `request.signal`, else the signal of the work
 * running in this async context. The request runs in that work's context (so the rate-limit
 * waits and the write queue see it), and it is refused once the work was told to stop: now, and
 * again at the moment it would leave (it may wait for its turn or a rate limit meanwhile). One
 * already sent is not cut off by this signal: its answer is what lets the work record what it
 * did. A request that failed after its work was told to stop fails with the stop's error.
 */
function refuseOnceStopped(octokit: InstallationOctokit, hardStop: AbortSignal | undefined): void {
  octokit.hook.wrap("request", async (request, options) => {
    // Without the caller's own, `options.request` is this Octokit's defaults object: what one
    // request sets here goes on a copy, or every later request would inherit it.
    const own = (options.request = { ...options.request }) as RequestOptions;
    const work = own.signal ?? currentSignal();
    delete own.signal;
    const stops = [hardStop, work].filter((s): s is AbortSignal => s !== undefined);
    throwIfAnyStopped(stops);
    if (work) {
      const send = own.fetch ?? globalThis.fetch;
      own.fetch = (input, init) => (work.aborted ? Promise.reject(stoppedError(work)) : send(input, init));
    }
    try {
      return await (work ? runWithSignal(work, () => request(options)) : request(options));
    } catch (error) {
      throwIfAnyStopped(stops);
      throw error;
    }
  });
}

export function createOctokitFactory(opts: OctokitFactoryOptions): OctokitFactory {
  const { config } = opts;
  const { writeSlots, tokens } = opts.coordination;
  const log = opts.logger.child({ component: "api" });
  // One abortable fetch for the whole factory: the hard stop has one listener, however many requests are in flight.
  const abortable = abortableFetch(opts.fetch ?? globalThis.fetch, {
    hardStop: opts.signal,
    timeoutMs: opts.timeoutMs ?? config.apiTimeoutMs ?? DEFAULT_API_TIMEOUT_MS,
  });
  const redirecting = createRedirectingFetch(abortable);
  // Longer waits go back to the queue (the engine retries at the time GitHub gave) rather than
  // hold a worker that other installations' work needs: one installation's spent budget must not
  // delay another's decisions.
  const maxWait = opts.maxRateLimitWaitSeconds ?? DEFAULT_MAX_RATE_LIMIT_WAIT_SECONDS;
  const apiHost = new URL(config.apiUrl).hostname;
  const writeInterval = opts.writeIntervalMs ?? 1_000;
  // The write slots pace writes (notifying ones three times as long), across replicas, from the
  // previous answer; the plugin's write groups would pace them again from the moment they are
  // let through. Declared options of the plugin, given limiters without limits.
  const unpaced = new Bottleneck.Group();

  /**
   * What to do about a rate limit: wait it out and try again, while the wait is within the
   * longest one accepted and the request did not meet a limit three times already. A secondary
   * limit is waited out for its Retry-After (the plugin's fallback: a minute), doubled each time
   * the request meets one again, as GitHub asks. The wait is this handler's own (the plugin adds
   * none, `retryAfterBaseValue: 0`): it ends as soon as the work that made the request or the
   * process is told to stop, and the request is not sent again.
   */
  const onLimit =
    (kind: "primary" | "secondary") =>
    async (
      retryAfter: number,
      options: { method: string; url: string },
      _octokit: unknown,
      retryCount: number,
    ): Promise<boolean> => {
      const wait = kind === "secondary" ? retryAfter * 2 ** retryCount : retryAfter;
      const retry = wait <= maxWait && retryCount < 3;
      log.warn(
        { method: options.method, url: scrub(options.url), retryAfter: wait, retry },
        `${kind} rate limit reached`,
      );
      if (!retry) return false;
      try {
        await stoppableDelay(wait * 1_000, stopsHere(opts.signal));
        return true;
      } catch {
        return false;
      }
    };

  function build(who: number | "app"): InstallationOctokit {
    const reserve = new BudgetReserve();
    const auth: Record<string, unknown> = { appId: config.appId, privateKey: config.privateKey, cache: tokens };
    if (who !== "app") auth.installationId = who;
    const octokit = new StewardOctokit({
      auth,
      baseUrl: config.apiUrl,
      userAgent: USER_AGENT,
      log: log.child({ installationId: who }),
      request: { fetch: observedFetch(redirecting.fetch, who, opts.observe, reserve) },
      retry: { retries: opts.retries ?? 3 },
      throttle: {
        // The plugin keeps its limits per throttling id: per installation.
        id: `steward-${who}`,
        onRateLimit: onLimit("primary"),
        onSecondaryRateLimit: onLimit("secondary"),
        retryAfterBaseValue: 0,
        write: unpaced,
        notifications: unpaced,
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
      const request = options.request as RequestOptions;
      if (options.method === "POST" && request.retries === undefined && !/\/access_tokens$/.test(String(options.url)))
        request.retries = 0;
    });
    refuseOnceStopped(octokit, opts.signal);
    spaceWrites(octokit, String(who), writeSlots, writeInterval, opts.signal);
    recordCalls(octokit);
    traceCalls(octokit, who, apiHost);
    holdForReserve(octokit, reserve);
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
      // Each client holds its plugins' state, and installations come and go over a process's
      // life: the ones used last are kept.
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

/**
 * Download a document at `url` without any credential: for a log or artifact redirect to
 * another host (the signed URL is the credential; sending the installation token along
 * would leak it). Handlers read the Location with `request: { redirect: "manual" }` first.
 */
export async function downloadWithoutAuth(
  url: string,
  opts: { fetch?: Fetch; maxBytes?: number } = {},
): Promise<string> {
  const target = new URL(url);
  if (target.protocol !== "https:" && target.protocol !== "http:")
    throw new Error(`cannot download ${target.protocol} URLs`);
  const response = await (opts.fetch ?? globalThis.fetch)(target.href, {
    redirect: "follow",
    headers: { "user-agent": USER_AGENT },
  });
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
