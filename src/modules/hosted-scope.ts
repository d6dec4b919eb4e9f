// Which hosted module (a handler module or a Probot app) the code running now works for, and
// for what (loading, starting, one delivery, one task, a route). Carried through the module's
// async work, so an error it raises outside what Steward awaits (an unawaited promise, a timer,
// an emitter) is still attributed to it: Node runs 'unhandledRejection' in the async context of
// the promise that was rejected and 'uncaughtException' in that of the callback that threw
// (dispatch/containment.ts listens to both). Requests a module makes from a delivery or task
// are counted here too, so its run can wait for the ones it did not await before it reports.
import type { Octokit } from "@octokit/core";
import { AsyncLocalStorage } from "node:async_hooks";

export type FaultKind = "unhandled rejection" | "uncaught exception";

export interface HostedRun {
  readonly module: string;
  /** What the module was doing: "loading", "starting", "delivery <id>", "task <key>", "a route". */
  readonly during: string;
  readonly deliveryId?: string;
  /** API requests of this run not answered yet; only runs that report an outcome count them. */
  readonly pending?: Set<Promise<unknown>>;
  /** An error the module raised in this run's async context that nothing awaited or caught. */
  fault(error: unknown, kind: FaultKind): void;
}

const scope = new AsyncLocalStorage<HostedRun>();

export function runHosted<T>(run: HostedRun, fn: () => T): T {
  return scope.run(run, fn);
}

export function currentHosted(): HostedRun | undefined {
  return scope.getStore();
}

/** Octokit plugin: a request made inside a run that counts them is counted until it is answered or fails. */
export function countHostedRequests(octokit: Octokit): Record<string, never> {
  octokit.hook.wrap("request", (request, options) => {
    const pending = scope.getStore()?.pending;
    const answer = Promise.resolve(request(options));
    if (pending) {
      pending.add(answer);
      // Handles this promise only: the caller's own (what `octokit.request` returned it) still rejects unhandled when nobody awaits it.
      const settled = () => void pending.delete(answer);
      answer.then(settled, settled);
    }
    return answer;
  });
  return {};
}
