// The write slots of one process (no Redis): an installation's writes go one at a time, each
// sent no sooner than the interval after the previous one was answered. GitHub asks for
// content-creating requests to be made serially and about a second apart, and it measures the
// spacing between the requests it receives: a turn that ended when the write was sent (rather
// than answered) would let a slow write and the next one overlap.
import type { WriteSlots } from "../store/redis-write-slots.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function createLocalWriteSlots(intervalMs: number, now: () => number = Date.now): WriteSlots {
  /** The last write queued per installation: the next one starts once it settled. */
  const tails = new Map<string, Promise<unknown>>();
  /** When the next write of an installation may be sent (the previous answer plus the interval). */
  const nextAt = new Map<string, number>();
  const holding = new Set<string>();

  async function turn<T>(who: string, send: () => Promise<T>): Promise<T> {
    const wait = (nextAt.get(who) ?? 0) - now();
    if (wait > 0) await sleep(wait);
    holding.add(who);
    try {
      return await send();
    } finally {
      holding.delete(who);
      if (intervalMs > 0) nextAt.set(who, now() + intervalMs);
    }
  }

  return {
    run<T>(who: string, send: () => Promise<T>): Promise<T> {
      const previous = tails.get(who);
      // No write of this installation queued: straight to the turn, with no promise hop to wait for.
      const mine = previous ? previous.then(() => turn(who, send), () => turn(who, send)) : turn(who, send);
      tails.set(who, mine);
      const forget = () => {
        if (tails.get(who) === mine) tails.delete(who);
      };
      mine.then(forget, forget);
      return mine;
    },
    held: () => [...holding],
  };
}
