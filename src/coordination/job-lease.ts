// Single-flight for long jobs (a sync of one organisation) across the service, the CLI and
// replicas: a lease kept in the shared store, renewed while the job runs, naming its holder so
// a second caller can say who runs it. A holder that died on this host is taken over at once;
// one elsewhere when its lease runs out. `force` takes the lease from a live holder, whose
// renewal then notices and stops its job.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Store } from "../store/types.js";
import { PROCESS_OWNER, processOwnerGone } from "../lifecycle/process-owner.js";
import { pause } from "../lifecycle/backoff.js";
import { linkSignals, throwIfStopped } from "../lifecycle/abort-scope.js";
import { releaseHeld } from "./lock.js";

export interface LeaseHolder {
  /** The holding process incarnation (see PROCESS_OWNER). */
  owner: string;
  /** This acquisition (one process may run the job again later). */
  token: string;
  /** For people: `steward sync (CLI)`, `service`. */
  who: string;
  host: string;
  pid: number;
  since: string;
}

export function describeHolder(h: LeaseHolder): string {
  return `${h.who}, pid ${h.pid} on ${h.host}, since ${h.since}`;
}

export class LeaseHeld extends Error {
  constructor(
    readonly job: string,
    readonly holder: LeaseHolder,
  ) {
    super(`${job} is already running: ${describeHolder(holder)}`);
    this.name = "LeaseHeld";
  }
}

export interface JobLeaseOptions {
  /** How long a lease outlives a holder that stopped renewing it (default 60 s). */
  ttlMs?: number;
  /** Take the lease even from a live holder. */
  force?: boolean;
  /** Wait for a live holder to finish instead of throwing LeaseHeld; `onWait` is told who it is. */
  wait?: boolean;
  onWait?(holder: LeaseHolder): void;
  /** Stops a wait (and is part of the job's signal). */
  signal?: AbortSignal;
  pollMs?: number;
}

async function acquire(
  store: Store,
  key: string,
  job: string,
  mine: LeaseHolder,
  opts: JobLeaseOptions,
  ttlMs: number,
): Promise<LeaseHolder | undefined> {
  let told = false;
  for (;;) {
    throwIfStopped(opts.signal);
    if (await store.claim(key, { ttlMs, value: mine })) return undefined;
    const held = await store.get<LeaseHolder>(key);
    if (!held) continue; // expired or released meanwhile
    if (processOwnerGone(held.owner)) {
      // Only that holder's lease: a live process may have taken the key since it was read.
      await store.replaceIf(key, { field: "token", equals: held.token });
      continue;
    }
    if (opts.force) {
      await store.set(key, mine, { ttlMs });
      return held;
    }
    if (!opts.wait) throw new LeaseHeld(job, held);
    if (!told) opts.onWait?.(held);
    told = true;
    await pause(opts.pollMs ?? 1_000, opts.signal ?? new AbortController().signal);
  }
}

/**
 * Runs `fn` holding the lease `key`. `fn`'s signal fires when `opts.signal` does or the lease
 * was lost (taken with force, or expired while this process stalled).
 */
export async function withJobLease<T>(
  store: Store,
  key: string,
  job: string,
  who: string,
  fn: (signal: AbortSignal, takenFrom: LeaseHolder | undefined) => Promise<T>,
  opts: JobLeaseOptions = {},
): Promise<T> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const mine: LeaseHolder = {
    owner: PROCESS_OWNER,
    token: randomUUID(),
    who,
    host: hostname(),
    pid: process.pid,
    since: new Date().toISOString(),
  };
  const takenFrom = await acquire(store, key, job, mine, opts, ttlMs);
  const lost = new AbortController();
  // Renewal is compare-and-set on this acquisition's token: a lease that expired (this process
  // stalled) and was taken by another holder is never written over, the job learns it lost it.
  const renew = setInterval(
    () => {
      void (async () => {
        if (await store.replaceIf(key, { field: "token", equals: mine.token }, { value: mine, ttlMs })) return;
        const held = await store.get<LeaseHolder>(key);
        lost.abort(new Error(held ? `lease taken by ${describeHolder(held)}` : "lease expired"));
        clearInterval(renew);
      })().catch(() => undefined);
    },
    Math.max(10, Math.floor(ttlMs / 3)),
  );
  renew.unref();
  const linked = opts.signal
    ? linkSignals([opts.signal, lost.signal])
    : { signal: lost.signal, unlink: () => undefined };
  try {
    return await fn(linked.signal, takenFrom);
  } finally {
    linked.unlink();
    clearInterval(renew);
    await releaseHeld(store, key, mine.token).catch(() => undefined);
  }
}
