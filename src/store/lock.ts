// A short mutual-exclusion lock kept in the Store, for handlers that read-modify-write one key
// (so it also holds across replicas sharing a store). Waiters in one process queue locally and
// only the head of the queue contends in the store. A lock left by a process that was killed
// on this host is taken over at once rather than after its TTL: a crash loop (several kills
// inside one TTL) would otherwise keep the lock's work failing until the delivery is parked.
import type { Store } from "./types.js";
import { PROCESS_OWNER, processOwnerGone } from "./lease.js";

export interface StoreLockOptions {
  /** How long a held lock lives if its holder never releases it. */
  ttlMs?: number;
  /** How long to wait for the lock before throwing. */
  waitMs?: number;
}

interface LockValue {
  owner: string;
}

const queues = new Map<string, Promise<void>>();

export async function withStoreLock<T>(store: Store, key: string, fn: () => Promise<T>, opts: StoreLockOptions = {}): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  let done!: () => void;
  const mine = previous.then(() => new Promise<void>((r) => (done = r)));
  queues.set(key, mine);
  await previous;
  try {
    await acquire(store, key, opts.ttlMs ?? 60_000, opts.waitMs ?? 30_000);
    try {
      return await fn();
    } finally {
      await store.release(key);
    }
  } finally {
    done();
    if (queues.get(key) === mine) queues.delete(key);
  }
}

async function acquire(store: Store, key: string, ttlMs: number, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  const value: LockValue = { owner: PROCESS_OWNER };
  while (!(await store.claim(key, { ttlMs, value }))) {
    const held = await store.get<LockValue>(key);
    if (held?.owner && processOwnerGone(held.owner)) {
      // Its holder was killed: nothing is in progress under it.
      await store.release(key);
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${key} stayed locked for ${waitMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 25 + Math.random() * 50));
  }
}
