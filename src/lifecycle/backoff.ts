// Retry a piece of start-up work in the background until it succeeds or the service stops:
// the API being down at boot delays that work, never the service.

export interface Backoff {
  /** First wait after a failure. */
  minMs: number;
  /** Longest wait between attempts. */
  maxMs: number;
}

export const defaultBackoff: Backoff = { minMs: 1_000, maxMs: 5 * 60_000 };

/** The wait after `failures` failures in a row (1 or more): minMs, doubling each time, at most maxMs. */
export function backoffWait(backoff: Backoff, failures: number): number {
  return Math.min(backoff.maxMs, backoff.minMs * 2 ** Math.min(failures - 1, 20));
}

/**
 * Resolves after `ms`, or at once when `signal` fires. The timer does not keep the process alive
 * unless `keepAlive`: work waited for (an API request's retry in a one-shot command) must.
 */
export function pause(ms: number, signal: AbortSignal, opts: { keepAlive?: boolean } = {}): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (!opts.keepAlive) timer.unref();
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Runs `run` until it resolves; after each failure calls `onFailure` with the wait before the
 * next attempt (doubling from minMs to maxMs). Resolves true when it succeeded, false when
 * `signal` fired first.
 */
export async function retryUntilDone(opts: {
  run: () => Promise<void>;
  signal: AbortSignal;
  backoff?: Backoff;
  onFailure(error: unknown, attempt: number, retryInMs: number): void;
}): Promise<boolean> {
  const backoff = opts.backoff ?? defaultBackoff;
  for (let attempt = 1; !opts.signal.aborted; attempt++) {
    try {
      await opts.run();
      return true;
    } catch (error) {
      if (opts.signal.aborted) return false;
      const wait = backoffWait(backoff, attempt);
      opts.onFailure(error, attempt, wait);
      await pause(wait, opts.signal);
    }
  }
  return false;
}
