// Retries of API requests that failed in a way trying again can change: a 5xx, a connection
// dropped or timed out (Octokit reports those as status 500), a 429 the throttling did not take
// on; never a 4xx that a retry gets again (400, 401, 403, 404, 410, 422, 451), nor a request
// that was stopped. The n-th retry after n² seconds (1, 4, 9 s), at most `retries` of them, or
// the request's own `request.retries` (0 for a creating POST, client.ts). A GraphQL answer whose
// error says the query went wrong on GitHub's side is retried as a 500.
//
// These are @octokit/plugin-retry's rules. The plugin is not used: it builds a Bottleneck
// limiter for every request, which was a sixth of a GET's time in the client (a GET sent 55 µs
// sooner and its answer handed over 15 µs sooner without it, analysis.md, 2026-11-29); here it
// is a loop. The wait ends early, refusing, once the work's stop signal or the hard stop fires.
import { stoppableDelay, stopsHere } from "../lifecycle/abort-scope.js";
import type { InstallationOctokit } from "./types.js";

/** Answers a retry would only get again. */
export const FINAL_STATUSES: readonly number[] = [400, 401, 403, 404, 410, 422, 451];

const GRAPHQL_SERVER_ERROR = /Something went wrong while executing your query/;

interface RetryOptions {
  retries: number;
  /** A second of the backoff, ms (tests shorten it). */
  unitMs?: number;
  /** The process's hard stop. */
  signal?: AbortSignal | undefined;
}

type RequestOptions = { retries?: number; retryCount?: number };

function retryable(error: unknown): boolean {
  const e = error as { status?: unknown; request?: { request?: unknown } } | null;
  // Only the errors of a request Octokit made (they carry it); anything else is the caller's.
  if (!e || e.request?.request === undefined || typeof e.status !== "number") return false;
  return e.status >= 400 && !FINAL_STATUSES.includes(e.status);
}

/** Installs the retries on `octokit`; registered before the hooks that must see a request once (they wrap it). */
export function retryFailedRequests(octokit: InstallationOctokit, opts: RetryOptions): void {
  const unit = opts.unitMs ?? 1_000;
  octokit.hook.wrap("request", async (request, options) => {
    // The stops that apply: the process's, and the work's that made the request.
    const stops = stopsHere(opts.signal);
    const own = options.request as RequestOptions;
    const retries = own.retries ?? opts.retries;
    for (let tries = 0; ; tries++) {
      try {
        const response = await request(options);
        const errors = (response.data as { errors?: { message?: unknown }[] } | null)?.errors;
        const first = Array.isArray(errors) ? errors[0] : undefined;
        if (typeof first?.message === "string" && GRAPHQL_SERVER_ERROR.test(first.message)) {
          // Shaped as Octokit's own request errors (name, status, request, response).
          throw Object.assign(new Error(first.message), { name: "HttpError", status: 500, request: options, response });
        }
        return response;
      } catch (error) {
        if (tries >= retries || !retryable(error)) throw error;
        // Read by the throttling plugin: a retry does not count against the installation's concurrency.
        own.retryCount = tries + 1;
        await stoppableDelay((tries + 1) ** 2 * unit, stops);
      }
    }
  });
}
