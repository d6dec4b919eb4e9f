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
