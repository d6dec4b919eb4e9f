// Bounded fan-out of one sync run. Rate limits are the API client's: it waits out the ones it
// can and answers a longer one with the limit's own error. Such an answer stops the run: the jobs
// not started yet are refused with `RateLimitPause`, so the caller schedules the rest for when
// the limit lifts (records make a later run skip what is done).
import Bottleneck from "bottleneck";
import { rateLimitWaitMs, throwIfStopped } from "../../src/index.js";
import { rateLimitResumeAt } from "./api.js";

export class RateLimitPause extends Error {
  constructor(readonly resumeAt: Date) {
    super(`rate limited until ${resumeAt.toISOString()}`);
  }
}

export interface FanOutOptions {
  /** Requests of this run in flight at once (default 8). */
  concurrency?: number;
  /** Once fired, jobs not started yet are not started (they throw the stop error). */
  signal?: AbortSignal;
}

export class FanOut {
  private readonly limiter: Bottleneck;
  private readonly signal: AbortSignal | undefined;
  /** Set once the client gave up on a rate limit: jobs not started yet are not started. */
  stopped: RateLimitPause | undefined;

  constructor(opts: FanOutOptions = {}) {
    this.limiter = new Bottleneck({ maxConcurrent: opts.concurrency ?? 8 });
    this.signal = opts.signal;
  }

  /** When the run was stopped by a rate limit: the moment to resume. */
  pausedUntil(): Date | undefined {
    return this.stopped?.resumeAt;
  }

  /** Run `job` within the run's concurrency. */
  run<T>(job: () => Promise<T>): Promise<T> {
    return this.limiter.schedule(async () => {
      if (this.stopped) throw this.stopped;
      throwIfStopped(this.signal);
      try {
        return await job();
      } catch (e) {
        if (rateLimitWaitMs(e) === undefined) throw e;
        this.stopped ??= new RateLimitPause(rateLimitResumeAt(e));
        throw this.stopped;
      }
    });
  }
}
