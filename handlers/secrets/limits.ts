// Bounded, rate-limit-aware fan-out. One Bottleneck per installation bounds concurrency; a
// rate-limited request pauses every job of that installation and is retried where it stopped.
// A pause longer than the caller accepts ends the run early with `RateLimitPause`, so the
// caller can schedule the rest (records make a later run skip what is done).
import Bottleneck from "bottleneck";
import { rateLimitResumeAt, rateLimitWaitMs } from "./api.js";
import { stoppableDelay, throwIfStopped } from "../../src/index.js";

export class RateLimitPause extends Error {
  constructor(readonly resumeAt: Date) {
    super(`rate limited until ${resumeAt.toISOString()}`);
  }
}

export interface FanOutOptions {
  /** Concurrent requests per installation (default 8). */
  concurrency?: number;
  /** Longest pause to wait out in place (default 60 s); longer ones end the run. */
  maxPauseMs?: number;
  /** Retries of one job after rate-limit pauses (default 5). */
  maxRateLimitRetries?: number;
  /** Once fired, jobs not started yet are not started (they throw the stop error). */
  signal?: AbortSignal;
}

interface Lane {
  limiter: Bottleneck;
  pausedUntil: number;
}

const lanes = new Map<string, Lane>();

function lane(id: string, concurrency: number): Lane {
  let l = lanes.get(id);
  if (!l) {
    l = { limiter: new Bottleneck({ maxConcurrent: concurrency }), pausedUntil: 0 };
    lanes.set(id, l);
  }
  return l;
}

export class FanOut {
  private readonly lane: Lane;
  private readonly maxPauseMs: number;
  private readonly maxRetries: number;
  private readonly signal: AbortSignal | undefined;
  /** Set once a pause exceeds the budget: jobs not started yet are not started. */
  stopped: RateLimitPause | undefined;
  /** Rate-limit pauses waited out in place. */
  pauses = 0;

  constructor(laneId: string, opts: FanOutOptions = {}) {
    this.lane = lane(laneId, opts.concurrency ?? 8);
    this.maxPauseMs = opts.maxPauseMs ?? 60_000;
    this.maxRetries = opts.maxRateLimitRetries ?? 5;
    this.signal = opts.signal;
  }

  /** When the run was stopped by a long rate limit: the moment to resume. */
  pausedUntil(): Date | undefined {
    return this.stopped?.resumeAt;
  }

  /** Run `job` in the lane; rate limits are waited out and the job retried. */
  run<T>(job: () => Promise<T>): Promise<T> {
    return this.lane.limiter.schedule(async () => {
      for (let attempt = 0; ; attempt++) {
        if (this.stopped) throw this.stopped;
        throwIfStopped(this.signal);
        const wait = this.lane.pausedUntil - Date.now();
        // A stop ends the pause (up to `maxPauseMs`, a minute by default) at once rather than after it.
        if (wait > 0) await stoppableDelay(wait, this.signal ? [this.signal] : []);
        throwIfStopped(this.signal);
        try {
          return await job();
        } catch (e) {
          const waitMs = rateLimitWaitMs(e);
          if (waitMs === undefined) throw e;
          if (waitMs > this.maxPauseMs || attempt >= this.maxRetries) {
            this.stopped ??= new RateLimitPause(rateLimitResumeAt(e));
            throw this.stopped;
          }
          this.pauses++;
          this.lane.pausedUntil = Math.max(this.lane.pausedUntil, Date.now() + waitMs);
        }
      }
    });
  }
}
