// The few REST helpers a sync needs: a narrow request type (so the CLI, the service and tests
// can hand in any Octokit), conditional reads, page-by-page lists, and error facts safe to show
// (never bodies).
import { cachedGet, rateLimitWaitMs, ResponseCache, type InstallationOctokit } from "../../src/index.js";

export interface ApiResponse {
  status: number;
  headers: Record<string, string | number | undefined>;
  data: any;
}

export interface Requester {
  request(route: string, params?: Record<string, unknown>): Promise<ApiResponse>;
}

/** Octokit's request is overloaded per route; a sync only needs the plain form. */
export function asRequester(octokit: Pick<InstallationOctokit, "request">): Requester {
  return octokit as unknown as Requester;
}

/**
 * ETags and bodies of the sync's GETs (scope lists, selected-repository lists, public keys, the
 * installation's repositories, the policy file), for every installation of this process. None
 * holds a secret value: secret lists carry names and timestamps only. Bounded (LRU).
 */
export const syncReads = new ResponseCache({ maxEntries: 50_000, maxBytes: 32 * 2 ** 20 });

/** Cache key of one GET: the namespace (API base and installation), the route and its parameters. */
function readKey(namespace: string, route: string, params: Record<string, unknown>): string {
  const named = Object.keys(params)
    .filter((k) => k !== "headers" && k !== "request")
    .sort()
    .map((k) => `${k}=${encodeURIComponent(String(params[k]))}`);
  return `${namespace}\0${route}?${named.join("&")}`;
}

/**
 * `api` with every GET made conditional: sent with the ETag of the last answer to the same
 * request in `namespace` (one installation), and a 304 (free of rate limit) answered with that
 * answer's body. Anything else passes through. Per installation, because an answer is only
 * valid for whoever may read it; ETags are even per token (see src/api/conditional.ts).
 */
export function withConditionalReads(api: Requester, namespace: string, cache: ResponseCache = syncReads): Requester {
  const request = (route: string, params: Record<string, unknown>) => api.request(route, params);
  return {
    request(route, params = {}) {
      const own = (params.headers as Record<string, unknown> | undefined)?.["if-none-match"];
      if (!/^GET\s/.test(route) || own !== undefined) return api.request(route, params);
      return cachedGet(request, cache, readKey(namespace, route, params), route, params);
    },
  };
}

/** Follows `page` until a short page or no `rel="next"`; `per_page` is the route's maximum. */
export async function listAll<T>(
  api: Requester,
  route: string,
  params: Record<string, unknown>,
  key: string,
  perPage: number,
): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; ; page++) {
    const res = await api.request(route, { ...params, per_page: perPage, page });
    const items = (res.data?.[key] ?? []) as T[];
    out.push(...items);
    const link = String(res.headers.link ?? "");
    if (
      items.length < perPage ||
      (link !== "" && !/rel="next"/.test(link)) ||
      (link === "" && typeof res.data?.total_count === "number" && out.length >= res.data.total_count)
    ) {
      return out;
    }
  }
}

export function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown })?.status;
  return typeof s === "number" ? s : undefined;
}

/** A short description of a failed request: status and the API's message, never request data. */
export function describeError(error: unknown): string {
  const status = statusOf(error);
  const data = (error as { response?: { data?: { message?: unknown } } })?.response?.data;
  const apiMessage = typeof data?.message === "string" ? data.message : undefined;
  const message = apiMessage ?? (error instanceof Error ? error.message.split(" - ")[0]! : String(error));
  return (status ? `${status} ` : "") + message.slice(0, 300);
}

/** The moment a rate limit lifts, on this machine's clock. */
export function rateLimitResumeAt(error: unknown, now = Date.now()): Date {
  return new Date(now + (rateLimitWaitMs(error, now) ?? 60_000));
}
