// Runs a background job every `intervalMs`, never two at once, never keeping the process
// alive, and never letting a failure escape (it is logged and the next run happens).
import type { Logger } from "pino";
import { safeErrorMessage } from "../log/redact.js";
import { runWithSignal } from "../lifecycle/abort-scope.js";

export interface Periodic<T = unknown> {
  /** Stop scheduling, tell a run in progress to stop (its signal) and wait for it at most `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /**
   * Run now, or join the run in progress (runs never overlap); the next run is timed from its
   * end. Never rejects: undefined when the run failed or the job is stopped.
   */
  runNow(): Promise<T | undefined>;
}

export function startPeriodic<T>(opts: {
  name: string;
  intervalMs: number;
  firstDelayMs: number;
  logger: Logger;
  /** Gets a signal that fires at stop(): stop between steps (the API client refuses requests after it). */
  run: (signal: AbortSignal) => Promise<T>;
}): Periodic<T> {
  const stopping = new AbortController();
  let stopped = opts.intervalMs <= 0;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<T | undefined> | undefined;
  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(runNow, delay);
    timer.unref();
  };
  function runNow(): Promise<T | undefined> {
    if (current) return current;
    if (stopped) return Promise.resolve(undefined);
    clearTimeout(timer);
    current = runWithSignal(stopping.signal, () => opts.run(stopping.signal))
      .catch((error: unknown) => {
        if (!stopping.signal.aborted)
          opts.logger.warn({ job: opts.name, error: safeErrorMessage(error) }, "background job failed");
        return undefined;
      })
      .finally(() => {
        current = undefined;
        schedule(opts.intervalMs);
      });
    return current;
  }
  schedule(opts.firstDelayMs);
  return {
    runNow,
    async stop(graceMs = Number.POSITIVE_INFINITY) {
      stopped = true;
      stopping.abort(new Error("shutting down"));
      clearTimeout(timer);
      if (!current) return;
      let bound: NodeJS.Timeout | undefined;
      const waited = Number.isFinite(graceMs)
        ? new Promise<void>((resolve) => (bound = setTimeout(resolve, graceMs)))
        : undefined;
      await (waited ? Promise.race([current, waited]) : current);
      clearTimeout(bound);
    },
  };
}
