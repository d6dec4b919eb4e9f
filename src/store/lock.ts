// A short mutual-exclusion lock kept in the Store, for handlers that read-modify-write one key
// (so it also holds across replicas sharing a store). Waiters in one process queue locally and
// only the head of the queue contends in the store. A lock left by a process that was killed
// on this host is taken over at once rather than after its TTL: a crash loop (several kills
// inside one TTL) would otherwise keep the lock's work failing until the delivery is parked.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Store } from "./types.js";
import { leaseOwnerDead } from "./lease.js";

const HOST = hostname();
/** This process incarnation: a restarted process may get the same pid (PID 1 in a container). */
const OWNER = `${HOST}/${process.pid}/${randomUUID()}`;

export interface StoreLockOptions {
  /** How long a held lock lives if its holder never releases it. */
  ttlMs?: number;
  /** How long to wait for the lock before throwing. */
  waitMs?: number;
}

interface LockValue {
  owner: string;
}

/** True when `owner` names a process on this host that is gone, or an earlier incarnation of this pid. */
export function lockOwnerGone(owner: string, self = OWNER): boolean {
  if (leaseOwnerDead(owner)) return true;
  const [host, pid] = owner.split("/");
  const [selfHost, selfPid] = self.split("/");
  return host === selfHost && pid === selfPid && owner !== self;
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
  const value: LockValue = { owner: OWNER };
  while (!(await store.claim(key, { ttlMs, value }))) {
    const held = await store.get<LockValue>(key);
    if (held?.owner && lockOwnerGone(held.owner)) {
      // Its holder was killed: nothing is in progress under it.
      await store.release(key);
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${key} stayed locked for ${waitMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 25 + Math.random() * 50));
  }
}
