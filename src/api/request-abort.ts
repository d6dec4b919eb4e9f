// Per-request cancellation of API calls: the process's hard stop and a bound on how long one
// request may wait for its answer. Every in-flight request gets its own AbortController; the
// hard stop has ONE listener that aborts those still in flight, so a thousand concurrent
// requests do not hang a thousand listeners on the same signal (Node warns past ten: a
// MaxListenersExceededWarning, and each listener is kept until its request ends).
import { stoppedError } from "../lifecycle/abort-scope.js";
import { scrub } from "../log/redact.js";

type Fetch = typeof globalThis.fetch;

/** A request that got no answer in time. `status` 0: no response, as a network error (the client retries it, retry.ts). */
export class ApiTimeoutError extends Error {
  readonly status = 0;
  constructor(
    readonly method: string,
    readonly url: string,
    readonly timeoutMs: number,
  ) {
    super(`GitHub API request ${method} ${url} got no answer within ${formatMs(timeoutMs)} (STEWARD_API_TIMEOUT)`);
    this.name = "ApiTimeoutError";
  }
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function where(input: Parameters<Fetch>[0]): string {
  const raw = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  try {
    const u = new URL(raw);
    // The query string may carry a credential (signed URLs): the path is enough to say which request.
    return scrub(`${u.origin}${u.pathname}`);
  } catch {
    return "(unparsable URL)";
  }
}

/**
 * `inner` with each request aborted when `hardStop` fires or after `timeoutMs` without an answer
 * (the response's headers; 0 or undefined: no bound). A signal the caller passes still aborts it.
 */
export function abortableFetch(
  inner: Fetch,
  opts: { hardStop?: AbortSignal | undefined; timeoutMs?: number | undefined },
): Fetch {
  const { hardStop } = opts;
  const timeoutMs = opts.timeoutMs && opts.timeoutMs > 0 ? opts.timeoutMs : undefined;
  if (!hardStop && timeoutMs === undefined) return inner;
  const inFlight = new Set<AbortController>();
  hardStop?.addEventListener(
    "abort",
    () => {
      for (const c of inFlight) c.abort(stoppedError(hardStop));
      inFlight.clear();
    },
    { once: true },
  );
  return async (input, init) => {
    if (hardStop?.aborted) throw stoppedError(hardStop);
    const mine = new AbortController();
    const own = init?.signal;
    // The caller's signal belongs to this request alone: one listener on it is one per request.
    const onOwn = () => mine.abort(own!.reason);
    if (own) {
      if (own.aborted) mine.abort(own.reason);
      else own.addEventListener("abort", onOwn, { once: true });
    }
    inFlight.add(mine);
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => mine.abort(new ApiTimeoutError(init?.method ?? "GET", where(input), timeoutMs)), timeoutMs);
    try {
      return await inner(input, { ...init, signal: mine.signal });
    } catch (error) {
      // fetch rejects with the abort reason, or with a generic AbortError on older undici: say which.
      if (mine.signal.aborted && mine.signal.reason instanceof Error) throw mine.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
      inFlight.delete(mine);
      own?.removeEventListener("abort", onOwn);
    }
  };
}
