// Task scheduling: each handler module schedules under its own name (its contexts get
// `schedulerFor(name)`), so one module's keys never collide with another's.
import type { Scheduler } from "../handler.js";
import type { Logger } from "pino";
import type { TasksPart } from "../store/contract.js";
import type { Clock } from "../lifecycle/clock.js";

export interface Schedulers {
  /** Keys are the handler's own (`abc`), stored under its name. */
  schedulerFor(handler: string): Scheduler;
}

/** `wake` is called after each schedule: a task due now should not wait for the next poll. */
export function createSchedulers(store: Pick<TasksPart, "scheduleTask" | "cancelTask">, wake: () => void): Schedulers {
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
  return { schedulerFor };
}

/**
 * Tasks follow the clock's jumps: when it moves by `delta`, every task still waiting is brought
 * forward (or put back) by as much, so work due in two hours of the clock's time runs once the
 * clock has been moved two hours on, without waiting and without a new event; then the queue is
 * looked at again. Only tasks not due yet move (one due now may be claimed meanwhile, and it runs
 * anyway). Returns the unsubscribe; a no-op for a clock that never jumps.
 */
export function followClockMoves(
  clock: Clock,
  store: Pick<TasksPart, "listTasks" | "scheduleTask">,
  wake: () => void,
  log: Logger,
): () => void {
  if (!clock.onMove) return () => undefined;
  let moving = Promise.resolve();
  return clock.onMove((deltaMs) => {
    // One move at a time, in order: two quick moves add up.
    moving = moving.then(async () => {
      try {
        const now = Date.now();
        const waiting = (await store.listTasks()).filter((t) => t.status === "pending" && t.runAt.getTime() > now);
        for (const t of waiting) {
          await store.scheduleTask(t.handler, {
            key: t.key,
            runAt: new Date(t.runAt.getTime() - deltaMs),
            data: t.data,
            ...(t.installationId !== undefined ? { installationId: t.installationId } : {}),
            replace: true,
          });
        }
        if (waiting.length) log.info({ deltaMs, tasks: waiting.length }, "clock moved: waiting tasks moved with it");
        wake();
      } catch (e) {
        log.warn({ err: e }, "clock moved, but the waiting tasks could not be moved with it");
      }
    });
  });
}
