// Lease keeping: while a delivery or task runs, its lease is renewed every third of its
// length. When a renewal finds the lease taken (this process stalled past it and another
// took the work), the run's signal is aborted: the work runs there, not twice.
import type { Logger } from "pino";
import type { LeasesPart } from "../store/contract.js";

export interface LeaseKeeper {
  /** Start renewing `token`; the signal fires when the lease is lost. */
  keep(token: string): AbortSignal;
  /** Stop renewing `token` (its run ended). */
  drop(token: string): void;
  /** Stop renewing `token` and hand its work back to the queue untouched. */
  giveBack(token: string): Promise<void>;
}

export function createLeaseKeeper(opts: {
  store: Pick<LeasesPart, "renewLease" | "releaseLease">;
  leaseMs: number;
  log: Logger;
  /** A lost lease only matters while the engine runs; during shutdown the work is handed back anyway. */
  running(): boolean;
}): LeaseKeeper {
  const { store, leaseMs, log } = opts;
  const heartbeats = new Map<string, NodeJS.Timeout>();
  return {
    keep(token) {
      const lost = new AbortController();
      const heartbeat = setInterval(() => {
        store
          .renewLease(token, leaseMs)
          .then((held) => {
            if (!held && opts.running()) lost.abort(new Error("lease lost"));
          })
          .catch((e) => log.warn({ err: e }, "lease renewal failed"));
      }, Math.max(10, Math.floor(leaseMs / 3)));
      heartbeat.unref();
      heartbeats.set(token, heartbeat);
      return lost.signal;
    },
    drop(token) {
      clearInterval(heartbeats.get(token));
      heartbeats.delete(token);
    },
    async giveBack(token) {
      clearInterval(heartbeats.get(token));
      await store.releaseLease(token);
    },
  };
}
