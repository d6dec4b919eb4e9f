// One piece of work at a time per key: each starts once the previous one of its key settled
// (fulfilled or not), and a key with nothing queued holds no memory. The write slots of an
// installation use it, in one process and across replicas alike.
//
// Work asked with `first` goes ahead of work queued without it: an installation's writes are paced
// (about one a second), and a write that answers something waiting (a re-run, a deployment
// review) should not wait behind a queue of check-run reports or a sync's writes. Among
// themselves each kind keeps the order asked, and the others are never starved: while work
// without `first` waits, at most FIRST_IN_A_ROW pieces with it start in a row.

export interface KeyedQueue {
  run<T>(key: string, work: () => Promise<T>, opts?: { first?: boolean }): Promise<T>;
}

/** How many `first` pieces may start in a row while other work of the key waits. */
export const FIRST_IN_A_ROW = 4;

interface Lane {
  first: (() => void)[];
  rest: (() => void)[];
  /** `first` pieces started in a row while others waited. */
  inARow: number;
}

export function createKeyedQueue(): KeyedQueue {
  /** Keys with work running; a key's lane holds what waits behind it. */
  const lanes = new Map<string, Lane>();

  function next(key: string, lane: Lane): void {
    const takeFirst = lane.first.length > 0 && (lane.rest.length === 0 || lane.inARow < FIRST_IN_A_ROW);
    const start = takeFirst ? lane.first.shift() : lane.rest.shift();
    if (!start) {
      lanes.delete(key);
      return;
    }
    lane.inARow = takeFirst && lane.rest.length > 0 ? lane.inARow + 1 : 0;
    start();
  }

  return {
    run<T>(key: string, work: () => Promise<T>, opts: { first?: boolean } = {}): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const start = () => {
          let running: Promise<T>;
          try {
            running = work();
          } catch (error) {
            running = Promise.reject(error);
          }
          running.then(resolve, reject).finally(() => next(key, lanes.get(key)!));
        };
        const lane = lanes.get(key);
        // Nothing running for the key: straight to the work.
        if (!lane) {
          lanes.set(key, { first: [], rest: [], inARow: 0 });
          start();
        } else (opts.first ? lane.first : lane.rest).push(start);
      });
    },
  };
}
