// A short mutual-exclusion lock kept in the Store, for handlers that read-modify-write one key
// (so it also holds across replicas sharing a store). Waiters in one process queue locally and
// only the head of the queue contends in the store. A lock left by a process that was killed
// on this host is taken over at once rather than after its TTL: a crash loop (several kills
// inside one TTL) would otherwise keep the lock's work failing until the delivery is parked.
import { randomUUID } from "node:crypto";
import type { Store } from "../store/types.js";
import { PROCESS_OWNER, processOwnerGone } from "../lifecycle/process-owner.js";
import { backoffWait, type Backoff } from "../lifecycle/backoff.js";

export interface StoreLockOptions {
  /** How long a held lock lives if its holder never releases it. */
  ttlMs?: number;
  /** How long to wait for the lock before throwing. */
  waitMs?: number;
}

interface LockValue {
  owner: string;
  /** This acquisition: release takes back only its own lock, never one taken after it expired. */
  token: string;
}

const queues = new Map<string, Promise<void>>();

/** Tries of a release before its error is the holder's (the store failing that long is not a blip). */
const RELEASE_ATTEMPTS = 4;
/** Waits between them: 50, 100, 200 ms. */
const RELEASE_BACKOFF: Backoff = { minMs: 50, maxMs: 200 };

export async function withStoreLock<T>(
  store: Store,
  key: string,
  fn: () => Promise<T>,
  opts: StoreLockOptions = {},
): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  let done!: () => void;
  const mine = previous.then(() => new Promise<void>((r) => (done = r)));
  queues.set(key, mine);
  await previous;
  try {
    const token = await acquire(store, key, opts.ttlMs ?? 60_000, opts.waitMs ?? 30_000);
    try {
      return await fn();
    } finally {
      await releaseHeld(store, key, token);
    }
  } finally {
    done();
    if (queues.get(key) === mine) queues.delete(key);
  }
}

/**
 * Deletes `key` if `token` still holds it (a lock's or a job lease's release), trying again a few
 * times when the store fails: one left behind holds the key's next holders off for its whole TTL.
 */
export async function releaseHeld(store: Store, key: string, token: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await store.replaceIf(key, { field: "token", equals: token });
      return;
    } catch (e) {
      if (attempt === RELEASE_ATTEMPTS) throw e;
      await new Promise((r) => setTimeout(r, backoffWait(RELEASE_BACKOFF, attempt)));
    }
  }
}

async function acquire(store: Store, key: string, ttlMs: number, waitMs: number): Promise<string> {
  const deadline = Date.now() + waitMs;
  const value: LockValue = { owner: PROCESS_OWNER, token: randomUUID() };
  while (!(await store.claim(key, { ttlMs, value }))) {
    const held = await store.get<Partial<LockValue>>(key);
    if (held?.owner && processOwnerGone(held.owner)) {
      // Its holder was killed: nothing is in progress under it. Only that lock: another may have taken the key since.
      await store.replaceIf(
        key,
        held.token ? { field: "token", equals: held.token } : { field: "owner", equals: held.owner },
      );
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${key} stayed locked for ${waitMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 25 + Math.random() * 50));
  }
  return value.token;
}
