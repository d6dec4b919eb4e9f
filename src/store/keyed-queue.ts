// One piece of work at a time per key, in the order asked: each starts once the previous one of its
// key settled (fulfilled or not), and a key with nothing queued holds no memory. The write slots of
// an installation use it, in one process and across replicas alike.

export interface KeyedQueue {
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
}

export function createKeyedQueue(): KeyedQueue {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run<T>(key: string, work: () => Promise<T>): Promise<T> {
      const previous = tails.get(key);
      // Nothing queued for the key: straight to the work, with no promise hop to wait for.
      const mine = previous ? previous.then(work, work) : work();
      tails.set(key, mine);
      const forget = () => {
        if (tails.get(key) === mine) tails.delete(key);
      };
      mine.then(forget, forget);
      return mine;
    },
  };
}
