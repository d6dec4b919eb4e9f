// The stop signal of the work running in this async context (a delivery, a task, a handler's
// start, a background job). The API client reads it so a handler's requests are refused once
// its work was told to stop, without every call site passing the signal along.
import { AsyncLocalStorage } from "node:async_hooks";

const scope = new AsyncLocalStorage<AbortSignal>();

export function runWithSignal<T>(signal: AbortSignal, fn: () => T): T {
  return scope.run(signal, fn);
}

export function currentSignal(): AbortSignal | undefined {
  return scope.getStore();
}

/**
 * A signal that fires when any of `sources` does, and `unlink` to call once the work it guards
 * ended. Not `AbortSignal.any`: on Node 20 each call leaves a WeakRef in every source that lives
 * on (the service's shutdown signal), one per delivery run, never removed: the heap grew ~1 MB
 * per 30,000 deliveries. Here the listeners go with `unlink`.
 */
export function linkSignals(sources: AbortSignal[]): { signal: AbortSignal; unlink(): void } {
  const controller = new AbortController();
  const fired = sources.find((s) => s.aborted);
  if (fired) {
    controller.abort(fired.reason);
    return { signal: controller.signal, unlink: () => undefined };
  }
  const listeners = sources.map((source) => {
    const onAbort = () => {
      unlink();
      controller.abort(source.reason);
    };
    source.addEventListener("abort", onAbort, { once: true });
    return () => source.removeEventListener("abort", onAbort);
  });
  const unlink = () => {
    for (const remove of listeners) remove();
  };
  return { signal: controller.signal, unlink };
}

/** The error a refused or interrupted step throws: recognisable by name, like fetch's own. */
export function stoppedError(signal?: AbortSignal): Error {
  const reason = signal?.reason;
  const why = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "work stopped";
  const error = new Error(`stopped: ${why}`);
  error.name = "AbortError";
  return error;
}

export function isStopped(error: unknown): boolean {
  return (error as { name?: unknown })?.name === "AbortError";
}

/** Throws the stop error when `signal` fired: the check long work makes between steps. */
export function throwIfStopped(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw stoppedError(signal);
}

/** Throws the stop error of the first of `stops` that fired, if any. */
export function throwIfAnyStopped(stops: readonly AbortSignal[]): void {
  const fired = stops.find((s) => s.aborted);
  if (fired) throw stoppedError(fired);
}

/**
 * Resolves after `ms`, or rejects with the stop's error as soon as one of `stops` fires (at once
 * when one already has): a wait whose work was told to stop has nothing left to wait for.
 */
export function stoppableDelay(ms: number, stops: readonly AbortSignal[]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    throwIfAnyStopped(stops);
    const listeners = stops.map((stop) => {
      const onAbort = () => {
        clear();
        reject(stoppedError(stop));
      };
      stop.addEventListener("abort", onAbort, { once: true });
      return () => stop.removeEventListener("abort", onAbort);
    });
    const clear = () => {
      clearTimeout(timer);
      for (const remove of listeners) remove();
    };
    const timer = setTimeout(
      () => {
        clear();
        resolve();
      },
      Math.max(0, ms),
    );
  });
}

/** The stops that apply to work asked now: `own` (e.g. the client's hard stop) and the signal of the work in this async context. */
export function stopsHere(...own: (AbortSignal | undefined)[]): AbortSignal[] {
  return [...own, currentSignal()].filter((s): s is AbortSignal => s !== undefined);
}
