// Bottleneck (used by Octokit's throttling plugin, and by our write spacing) yields to the
// event loop with setTimeout(0) at every step of a job, and Node clamps that to 1 ms. An
// Octokit request passed three limiters (the retry plugin's, since replaced by retry.ts;
// throttling's retry limiter; the global group), about a dozen such yields: ~15 ms per API
// call on an idle machine, which bounded
// Steward's end-to-end latency (SGrondin/bottleneck#144; the library is unmaintained).
// Here the zero-delay yields become microtasks. They were setImmediate at first, which still
// waits out the rest of a turn of the event loop: on a busy loop (the intake answering, other
// runs' responses, in sandbox mode the hub itself) each of a write's limiters cost a turn, 8 ms
// from a handler's POST to the socket in the end-to-end bench, against about 1 ms now. Nothing
// is lost by not yielding: a job's own work is a request, which waits for I/O anyway.
// Non-zero waits (minTime spacing, rate-limit retries, expirations) keep Bottleneck's timers.
import { createRequire } from "node:module";

interface JobLike {
  retryCount: number;
  options: { id: string; expiration?: number | null };
  doRun(): void;
  doExecute(chained: unknown, clearGlobalState: () => boolean, run: (wait: number) => unknown, free: (...a: unknown[]) => unknown): Promise<unknown>;
}

interface LimiterLike {
  _store: object;
  _limiter: unknown;
  _scheduled: Record<string, { timeout: unknown; expiration: unknown; job: JobLike }>;
  _run(index: string, job: JobLike, wait: number): unknown;
  _clearGlobalState(index: string): boolean;
  _free(index: string, job: JobLike, ...rest: unknown[]): unknown;
  jobStatus(id: string): string | null;
  disconnect?(): unknown;
}

type LimiterClass = { new (): LimiterLike; prototype: LimiterLike };
type StoreProto = { yieldLoop(this: { Promise: PromiseConstructor }, t?: number): Promise<void> };

const patched = Symbol.for("steward.bottleneckYield");

function patch(Limiter: LimiterClass): boolean {
  const proto = Limiter.prototype as LimiterLike & { [patched]?: true };
  if (proto[patched]) return true;
  const probe = new Limiter();
  const store = Object.getPrototypeOf(probe._store) as StoreProto;
  void probe.disconnect?.();
  if (typeof store.yieldLoop !== "function" || typeof proto._run !== "function" || proto._run.length !== 3) return false;

  const yieldLoop = store.yieldLoop;
  store.yieldLoop = function (t = 0) {
    return t === 0 ? new this.Promise<void>((resolve) => queueMicrotask(resolve)) : yieldLoop.call(this, t);
  };

  const run = proto._run;
  proto._run = function (this: LimiterLike, index: string, job: JobLike, wait: number) {
    // Retries and expiring jobs keep the original path (its timers are what stop() clears).
    if (wait > 0 || job.retryCount !== 0 || job.options.expiration != null) return run.call(this, index, job, wait);
    job.doRun();
    const clearGlobalState = this._clearGlobalState.bind(this, index);
    const again = this._run.bind(this, index, job);
    const free = this._free.bind(this, index, job);
    const entry = { timeout: undefined, expiration: undefined, job };
    this._scheduled[index] = entry;
    queueMicrotask(() => {
      // stop({ dropWaitingJobs }) drops a job it cannot clear a timer for: it is no longer RUNNING.
      if (this._scheduled[index] !== entry || this.jobStatus(job.options.id) !== "RUNNING") return;
      void job.doExecute(this._limiter, clearGlobalState, again, free);
    });
    return entry;
  };
  proto[patched] = true;
  return true;
}

let applied: boolean | undefined;

/** Idempotent. False when Bottleneck's internals are not the ones this was written for (then nothing changes). */
export function removeBottleneckYieldDelay(): boolean {
  if (applied !== undefined) return applied;
  const require = createRequire(import.meta.url);
  // Both bundles: the plugins use bottleneck/light, our write spacing the full build.
  const bundles = [require("bottleneck/light.js") as LimiterClass, require("bottleneck") as LimiterClass];
  applied = bundles.every((Limiter) => patch(Limiter));
  return applied;
}
