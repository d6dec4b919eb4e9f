// The write slots of one process (no Redis): an installation's writes go one at a time, each
// sent no sooner than the interval after the previous one was answered. GitHub asks for
// content-creating requests to be made serially and about a second apart, and it measures the
// spacing between the requests it receives: a turn that ended when the write was sent (rather
// than answered) would let a slow write and the next one overlap.
import type { WriteSlots } from "./redis/write-slots.js";
import { stoppableDelay, throwIfAnyStopped } from "../lifecycle/abort-scope.js";
import { createKeyedQueue } from "./keyed-queue.js";

export function createLocalWriteSlots(intervalMs: number, now: () => number = Date.now): WriteSlots {
  const queue = createKeyedQueue();
  /** When the next write of an installation may be sent (the previous answer plus the interval). */
  const nextAt = new Map<string, number>();
  const holding = new Set<string>();

  async function turn<T>(who: string, send: () => Promise<T>, stops: readonly AbortSignal[]): Promise<T> {
    throwIfAnyStopped(stops);
    const wait = (nextAt.get(who) ?? 0) - now();
    if (wait > 0) await stoppableDelay(wait, stops);
    holding.add(who);
    try {
      return await send();
    } finally {
      holding.delete(who);
      if (intervalMs > 0) nextAt.set(who, now() + intervalMs);
    }
  }

  return {
    run: (who, send, opts) => queue.run(who, () => turn(who, send, opts?.stops ?? []), opts),
    held: () => [...holding],
  };
}
