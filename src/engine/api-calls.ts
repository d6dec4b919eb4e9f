// The API calls each handler run made for a delivery, kept beside it (in the store's
// key/value space, expiring with the delivery's retention) for the console's delivery page.
// Bounded twice: a run keeps its last MAX_CALLS calls, and a delivery its last MAX_CALLS.
import type { Logger } from "pino";
import type { Store } from "../store/types.js";
import { withApiCallSink, type ApiCall } from "../api/call-scope.js";

export const MAX_CALLS = 100;

/** The calls of one handler's run (or of the preparation all handlers of a run share). */
export interface HandlerRunCalls {
  handler: string;
  attempt: number;
  at: string;
  calls: ApiCall[];
  /** Calls left out because the run made more than MAX_CALLS. */
  dropped: number;
}

export function apiCallsKey(deliveryId: string): string {
  return `steward:api-calls:${deliveryId}`;
}

/** The stored runs of a delivery, oldest first. */
export async function storedApiCalls(store: Pick<Store, "get">, deliveryId: string): Promise<HandlerRunCalls[]> {
  const value = await store.get<HandlerRunCalls[]>(apiCallsKey(deliveryId));
  return Array.isArray(value) ? value : [];
}

export interface DeliveryApiCalls {
  /** Runs `fn` with the API calls it makes logged under `handler`'s run. */
  during<T>(handler: string, attempt: number, fn: () => Promise<T>): Promise<T>;
  /** Saves this run's calls with the delivery (when it made any). */
  save(): Promise<void>;
}

export interface ApiCallLog {
  forDelivery(deliveryId: string): DeliveryApiCalls;
}

/** Keeps the newest runs whose calls total at most MAX_CALLS (the newest run is always kept, cut). */
function trim(runs: HandlerRunCalls[]): HandlerRunCalls[] {
  const kept: HandlerRunCalls[] = [];
  let total = 0;
  for (let i = runs.length - 1; i >= 0 && total < MAX_CALLS; i--) {
    const run = runs[i]!;
    const room = MAX_CALLS - total;
    kept.unshift(
      run.calls.length <= room
        ? run
        : { ...run, calls: run.calls.slice(-room), dropped: run.dropped + run.calls.length - room },
    );
    total += Math.min(room, run.calls.length);
  }
  return kept;
}

export function createApiCallLog(store: Pick<Store, "get" | "set">, retentionMs: number, log: Logger): ApiCallLog {
  return {
    forDelivery(deliveryId) {
      const runs: HandlerRunCalls[] = [];
      return {
        during(handler, attempt, fn) {
          const run: HandlerRunCalls = { handler, attempt, at: new Date().toISOString(), calls: [], dropped: 0 };
          runs.push(run);
          return withApiCallSink((call) => {
            run.calls.push(call);
            if (run.calls.length > MAX_CALLS) {
              run.calls.shift();
              run.dropped++;
            }
          }, fn);
        },
        async save() {
          const made = runs.filter((r) => r.calls.length > 0 || r.dropped > 0);
          if (made.length === 0) return;
          try {
            // One run of a delivery at a time (its lease), so reading and writing back loses nothing.
            const before = await storedApiCalls(store, deliveryId);
            await store.set(apiCallsKey(deliveryId), trim([...before, ...made]), { ttlMs: retentionMs });
          } catch (e) {
            // What the calls were is for people; the delivery's own outcome matters more.
            log.warn({ err: e, delivery: deliveryId }, "API calls of the delivery not saved");
          }
        },
      };
    },
  };
}
