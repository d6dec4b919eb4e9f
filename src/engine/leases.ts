// Lease keeping: while a delivery or task runs, its lease is renewed every third of its
// length. When a renewal finds the lease taken (this process stalled past it and another
// took the work), the run's signal is aborted: the work runs there, not twice.
import type { Logger } from "pino";
import { TokenTable } from "./token-table.js";
import type { LeasesPart } from "../store/contract.js";

export interface LeaseKeeper {
  /** Start renewing `token`; `lost` is called when the lease is found taken. */
  keep(token: string, lost: (reason: Error) => void): void;
  /** Stop renewing `token` (its run ended). */
  drop(token: string): void;
  /** Stop renewing `token` and hand its work back to the queue untouched. */
  giveBack(token: string): Promise<void>;
}

/**
 * One heartbeat renews every lease held, rather than a timer per run: a run costs a map entry,
 * not a timer and an abort controller. A lease kept just after a beat is first renewed at the
 * next, within a third of its length.
 */
export function createLeaseKeeper(opts: {
  store: Pick<LeasesPart, "renewLease" | "releaseLease">;
  leaseMs: number;
  log: Logger;
  /** A lost lease only matters while the engine runs; during shutdown the work is handed back anyway. */
  running(): boolean;
}): LeaseKeeper {
  const { store, leaseMs, log } = opts;
  const held = new TokenTable<(reason: Error) => void>();
  let heartbeat: NodeJS.Timeout | undefined;

  function beat(): void {
    for (const [token, lost] of held.entries()) {
      store
        .renewLease(token, leaseMs)
        .then((renewed) => {
          // Dropped meanwhile: the run ended, and its finish released the lease.
          if (!renewed && opts.running() && held.get(token) === lost) lost(new Error("lease lost"));
        })
        .catch((e) => log.warn({ err: e }, "lease renewal failed"));
    }
  }

  function release(token: string): void {
    held.delete(token);
    if (held.size === 0 && heartbeat) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
  }

  return {
    keep(token, lost) {
      held.set(token, lost);
      if (!heartbeat) {
        heartbeat = setInterval(beat, Math.max(10, Math.floor(leaseMs / 3)));
        heartbeat.unref();
      }
    },
    drop: release,
    async giveBack(token) {
      release(token);
      await store.releaseLease(token);
    },
  };
}
