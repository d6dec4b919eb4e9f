// Task scheduling: each handler module schedules under its own name (its contexts get
// `schedulerFor(name)`); the service-wide scheduler reads the module from the key's prefix.
import type { Scheduler } from "../handler.js";
import type { TasksPart } from "../store/contract.js";

export interface Schedulers {
  /** Keys are the handler's own (`abc`), stored under its name. */
  schedulerFor(handler: string): Scheduler;
  /** Keys name the handler: `rerun:abc` is the `rerun` module's task `abc`. */
  scheduler: Scheduler;
}

/** `wake` is called after each schedule: a task due now should not wait for the next poll. */
export function createSchedulers(handlers: ReadonlySet<string>, store: Pick<TasksPart, "scheduleTask" | "cancelTask">, wake: () => void): Schedulers {
  const schedulers = new Map<string, Scheduler>();
  function schedulerFor(handler: string): Scheduler {
    let s = schedulers.get(handler);
    if (!s) {
      s = {
        schedule: async (request) => {
          await store.scheduleTask(handler, request);
          wake();
        },
        cancel: (key) => store.cancelTask(handler, key),
      };
      schedulers.set(handler, s);
    }
    return s;
  }
  function splitKey(key: string): { handler: string; key: string } {
    const i = key.indexOf(":");
    const handler = i > 0 ? key.slice(0, i) : "";
    if (!handlers.has(handler)) throw new Error(`task key "${key}" does not start with a handler name and ":"`);
    return { handler, key: key.slice(i + 1) };
  }
  const scheduler: Scheduler = {
    schedule: async (request) => {
      const { handler, key } = splitKey(request.key);
      return schedulerFor(handler).schedule({ ...request, key });
    },
    cancel: async (fullKey) => {
      const { handler, key } = splitKey(fullKey);
      return schedulerFor(handler).cancel(key);
    },
  };
  return { schedulerFor, scheduler };
}
