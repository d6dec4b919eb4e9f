// The write slots of one process (no shared backend): an installation's writes go one at a
// time, each sent no sooner than the previous one's gap after it was answered. GitHub measures
// the spacing between the requests it receives: a turn that ended when the write was sent
// (rather than answered) would let a slow write and the next one overlap.
import type { WriteSlots } from "../api/types.js";
import { stoppableDelay, throwIfAnyStopped } from "../lifecycle/abort-scope.js";
import { createKeyedQueue } from "./keyed-queue.js";

export interface LocalWriteSlots extends WriteSlots {
  /** Installations with a write in flight now. */
  held(): string[];
}

export function createLocalWriteSlots(now: () => number = Date.now): LocalWriteSlots {
  const queue = createKeyedQueue();
  /** When the next write of an installation may be sent (the previous answer plus its gap). */
  const nextAt = new Map<string, number>();
  const holding = new Set<string>();

  async function turn<T>(
    who: string,
    send: () => Promise<T>,
    gapMs: number,
    stops: readonly AbortSignal[],
  ): Promise<T> {
    throwIfAnyStopped(stops);
    const wait = (nextAt.get(who) ?? 0) - now();
    if (wait > 0) await stoppableDelay(wait, stops);
    else nextAt.delete(who);
    holding.add(who);
    try {
      return await send();
    } finally {
      holding.delete(who);
      if (gapMs > 0) nextAt.set(who, now() + gapMs);
    }
  }

  return {
    run: (who, send, t) => queue.run(who, () => turn(who, send, t.gapMs, t.stops ?? []), t),
    held: () => [...holding],
  };
}
