// The few REST helpers a sync needs: a narrow request type (so the CLI, the service and tests
// can hand in any Octokit), page-by-page lists, and error facts safe to show (never bodies).
import type { InstallationOctokit } from "../../src/handler.js";

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

/** Follows `page` until a short page or no `rel="next"`; `per_page` is the route's maximum. */
export async function listAll<T>(api: Requester, route: string, params: Record<string, unknown>, key: string, perPage: number): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; ; page++) {
    const res = await api.request(route, { ...params, per_page: perPage, page });
    const items = (res.data?.[key] ?? []) as T[];
    out.push(...items);
    const link = String(res.headers.link ?? "");
    if (items.length < perPage || (link !== "" && !/rel="next"/.test(link)) || (link === "" && typeof res.data?.total_count === "number" && out.length >= res.data.total_count)) {
      return out;
    }
  }
}

export function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown })?.status;
  return typeof s === "number" ? s : undefined;
}

function headersOf(error: unknown): Record<string, string | number | undefined> {
  return ((error as { response?: { headers?: Record<string, string | number | undefined> } })?.response?.headers ?? {}) as Record<string, string | number | undefined>;
}

/** A short description of a failed request: status and the API's message, never request data. */
export function describeError(error: unknown): string {
  const status = statusOf(error);
  const data = (error as { response?: { data?: { message?: unknown } } })?.response?.data;
  const apiMessage = typeof data?.message === "string" ? data.message : undefined;
  const message = apiMessage ?? (error instanceof Error ? error.message.split(" - ")[0]! : String(error));
  return (status ? `${status} ` : "") + message.slice(0, 300);
}

/**
 * How long to wait before retrying a rate-limited request, or undefined when the error is
 * not a rate limit. Uses Retry-After, else X-RateLimit-Reset measured against the server's Date.
 */
export function rateLimitWaitMs(error: unknown, now = Date.now()): number | undefined {
  const status = statusOf(error);
  if (status !== 403 && status !== 429) return undefined;
  const h = headersOf(error);
  const retryAfter = Number(h["retry-after"]);
  if (h["retry-after"] !== undefined && Number.isFinite(retryAfter)) return Math.max(0, retryAfter * 1000);
  if (String(h["x-ratelimit-remaining"]) !== "0") return status === 429 ? 60_000 : undefined;
  const reset = Number(h["x-ratelimit-reset"]) * 1000;
  const serverNow = h.date ? Date.parse(String(h.date)) : now;
  if (!Number.isFinite(reset)) return 60_000;
  return Math.max(0, reset - (Number.isFinite(serverNow) ? serverNow : now)) + 1000;
}

/** The moment a rate limit lifts, on this machine's clock. */
export function rateLimitResumeAt(error: unknown, now = Date.now()): Date {
  return new Date(now + (rateLimitWaitMs(error, now) ?? 60_000));
}
