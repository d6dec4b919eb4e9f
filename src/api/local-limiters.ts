// The two limiters every API request of a process-local client passes through, in place of the
// Bottleneck ones Octokit's throttling plugin builds: its retry limiter (a request refused by a
// rate limit is sent again after the wait the client's handlers ask for) and the `global` group
// (at most ten requests of an installation in flight). Bottleneck keeps job records, states and
// events for each request, with several promise hops per limiter, and it is there for what one
// process does not need: limits shared through Redis. The same two rules are a retry loop and a
// counter. Measured on a 2-core VM (one GET after another against the sandbox hub): see
// test/bench/analysis.md. Clients that share their throttling through Redis keep Bottleneck.
import { stoppableDelay, stopsHere } from "../lifecycle/abort-scope.js";

/** What the throttling plugin calls on its retry limiter. */
export interface RetryLimiter {
  on(event: string, handler: (...args: any[]) => unknown): this;
  schedule(fn: (...args: any[]) => Promise<unknown>, ...args: unknown[]): Promise<unknown>;
}

/** The plugin's "failed" handler: a number of milliseconds to wait before trying again, or nothing. */
type FailedHandler = (error: unknown, info: { args: unknown[]; retryCount: number }) => unknown;

/**
 * A job that fails is handed to the "failed" handler; when it answers a number of milliseconds,
 * the job runs again after that wait (as Bottleneck does). A wait ends early, failing the job
 * with the stop's error, when `hardStop` (the client's) fires or when the work that made the
 * request is told to stop (its signal in the async context, abort-scope.ts): the retry would be
 * refused anyway, and a rate-limit wait of up to 15 minutes must not hold a stopping service.
 */
export function createRetryLimiter(hardStop?: AbortSignal): RetryLimiter {
  let failed: FailedHandler | undefined;
  const attempt = async (fn: (...args: any[]) => Promise<unknown>, args: unknown[], retryCount: number, stops: AbortSignal[]): Promise<unknown> => {
    try {
      return await fn(...args);
    } catch (error) {
      let wait: unknown;
      try {
        wait = await failed?.(error, { args, retryCount });
      } catch {
        // A handler that throws asks for nothing (Bottleneck reports it and gives up on the job).
        wait = undefined;
      }
      if (typeof wait !== "number" || !Number.isFinite(wait)) throw error;
      await stoppableDelay(wait, stops);
      return attempt(fn, args, retryCount + 1, stops);
    }
  };
  const limiter: RetryLimiter = {
    on(event, handler) {
      if (event === "failed") failed = handler as FailedHandler;
      return limiter;
    },
    schedule: (fn, ...args) => attempt(fn, args, 0, stopsHere(hardStop)),
  };
  return limiter;
}

interface Waiting {
  fn: (...args: any[]) => unknown;
  args: unknown[];
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Bottleneck's job options as the plugin passes them: a retry has priority 0 and weight 0. */
interface JobOptions {
  priority?: number;
  weight?: number;
}

/** One key's limiter: `max` jobs running at once, the rest in order (a retry ahead of the others). */
class Gate {
  #running = 0;
  readonly #waiting: Waiting[] = [];

  constructor(
    private readonly max: number,
    private readonly onIdle: () => void,
  ) {}

  schedule(...given: unknown[]): Promise<unknown> {
    const withOptions = typeof given[0] !== "function";
    const options = (withOptions ? given[0] : {}) as JobOptions | undefined;
    const fn = given[withOptions ? 1 : 0] as (...args: any[]) => unknown;
    const args = given.slice(withOptions ? 2 : 1);
    // A retry (weight 0) holds no slot: it already waited its turn once, as in Bottleneck.
    if (options?.weight === 0) return invoke(fn, args);
    if (this.#running < this.max) return this.#run(fn, args);
    return new Promise((resolve, reject) => {
      const job = { fn, args, resolve, reject };
      if (options?.priority === 0) this.#waiting.unshift(job);
      else this.#waiting.push(job);
    });
  }

  #run(fn: (...args: any[]) => unknown, args: unknown[]): Promise<unknown> {
    this.#running += 1;
    const done = invoke(fn, args);
    done.then(this.#next, this.#next);
    return done;
  }

  readonly #next = (): void => {
    this.#running -= 1;
    const job = this.#waiting.shift();
    if (job) this.#run(job.fn, job.args).then(job.resolve, job.reject);
    else if (this.#running === 0) this.onIdle();
  };
}

function invoke(fn: (...args: any[]) => unknown, args: unknown[]): Promise<unknown> {
  try {
    return Promise.resolve(fn(...args));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** What the plugin calls on a group: `group.key(id).schedule(options, fn, ...args)`. */
export interface ConcurrencyGroup {
  key(id: string): { schedule(...args: unknown[]): Promise<unknown> };
}

/** At most `max` jobs of each key running at once. A key's state is dropped once it has nothing running or waiting. */
export function createConcurrencyGroup(max: number): ConcurrencyGroup {
  const gates = new Map<string, Gate>();
  return {
    key(id) {
      let gate = gates.get(id);
      if (!gate) {
        const created = new Gate(max, () => {
          if (gates.get(id) === created) gates.delete(id);
        });
        gates.set(id, created);
        gate = created;
      }
      return gate;
    },
  };
}
