// The intake's side of the engine. A delivery arriving while a worker is free and nothing is
// queued is recorded already leased and handed to the worker with the payload the intake
// parsed: no claim, no reading it back, no second parse. Otherwise it is queued and the pool
// claims it in order. During a flood (intake-first.ts) a backend with a spool takes it there.
import type { DeliveryIntake, IncomingDelivery } from "../intake/delivery-intake.js";
import type { StewardStore } from "../store/contract.js";
import type { ClaimedDelivery } from "../store/records.js";
import type { WorkerPool } from "./pool.js";
import type { IntakeFirst } from "./intake-first.js";

export function createIntake(
  store: Pick<StewardStore, "deliveries" | "leases" | "ready">,
  pool: WorkerPool,
  leaseMs: number,
  intakeFirst?: IntakeFirst,
  /** Whether some handler (or the engine itself) takes the delivery; one none takes is recorded settled. */
  routed: (delivery: IncomingDelivery) => boolean = () => true,
): DeliveryIntake {
  async function recordAndRun(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    const claim: ClaimedDelivery | "duplicate" = await pool.reserveWorker(() => store.deliveries.recordLeased(delivery, leaseMs));
    if (claim === "duplicate") return claim;
    // Shutdown began meanwhile: the run would outlive stop(); the queue keeps it for the next start.
    if (pool.state() === "running") pool.launch({ kind: "delivery", claim });
    else await store.leases.releaseLease(claim.token);
    return "recorded";
  }

  /** A queued delivery's row is committed: the pool learns of it. */
  const queued = (result: "recorded" | "duplicate") => {
    if (result === "recorded") {
      pool.markBacklogged();
      pool.wake();
    }
    return result;
  };

  // Not an async function: each path returns the store's own promise, so a delivery costs no
  // promise of this layer's and no turns of the microtask queue to adopt the store's.
  function record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    intakeFirst?.arrived();
    // Taken off the caller's object: the largest object of a request must not live on with the
    // request (past a scavenge it is promoted, and the old generation grows) when no run uses it.
    const { parsed } = delivery;
    delivery.parsed = undefined;
    // Nothing to run (a job queued or in progress, a check run created, an event only some other
    // app of the installation wants): recorded done, and the pool is neither woken nor given it.
    // Spooled whenever the spool takes it, flood or not: nobody waits for its row, and a commit
    // of its own would hold its sender for the commit.
    if (!routed(delivery)) {
      delivery.settled = true;
      return store.deliveries.recordSpooled?.(delivery) ?? store.deliveries.record(delivery);
    }
    if (pool.mayRunAtOnce()) return recordAndRun({ ...delivery, parsed });
    // During a flood, the turn's deliveries in one write to the spool rather than a commit; the pool is woken by the move.
    const spooled = intakeFirst?.yielding() ? store.deliveries.recordSpooled?.(delivery) : undefined;
    if (spooled) {
      pool.markBacklogged();
      return spooled;
    }
    return store.deliveries.record(delivery).then(queued);
  }

  return {
    record: (delivery) => {
      try {
        return record(delivery);
      } catch (error) {
        // A caller that chains on the promise sees the failure there, as from an async function.
        return Promise.reject(error);
      }
    },
    ready: async () => pool.state() !== "stopping" && pool.state() !== "stopped" && (await store.ready()),
    depth: () => store.deliveries.depth(),
  };
}
