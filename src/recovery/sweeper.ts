// The redelivery sweeper the service runs: GitHub does not retry failed deliveries, so every
// interval it asks again for those that never got a 2xx from Steward (redeliver.ts: one sweep).
// The first sweep waits a little so start-up stays quick, and looks back further than the
// others: it covers the deliveries sent while Steward was down. A failing sweep is logged and
// never thrown: recovery must not take the service down.
import type { Logger } from "pino";
import type { OctokitFactory } from "../api/types.js";
import type { Store } from "../store/types.js";
import { safeErrorMessage } from "../log/redact.js";
import { startPeriodic, type Periodic } from "../ops/periodic.js";
import { sweepRedeliveries, type SweepResult } from "./redeliver.js";

/** The first sweep after start looks back this far. */
export const FIRST_SWEEP_LOOKBACK_MS = 24 * 3_600_000;
/** The first sweep waits at most this long after start. */
const FIRST_SWEEP_DELAY_MS = 60_000;

/** How far a sweep looks back: the first one a day, later ones three intervals (at least an hour). */
export function sweepLookbackMs(intervalMs: number, first: boolean): number {
  return first ? FIRST_SWEEP_LOOKBACK_MS : Math.max(3 * intervalMs, 3_600_000);
}

export interface RedeliverySweeperOptions {
  octokits: OctokitFactory;
  store: Store;
  /** True when Steward already recorded this delivery id (it reached us; no redelivery needed). */
  isKnown(guid: string): Promise<boolean>;
  logger: Logger;
  /** Between sweeps (STEWARD_REDELIVER_INTERVAL); 0 or less: no sweeps. */
  intervalMs: number;
  /** Upper bound of redelivery requests per sweep. */
  maxRequests?: number;
}

const nothing = (): SweepResult => ({ scanned: 0, requested: [], alreadyAsked: 0, failed: [] });

/** `stop(graceMs)` at shutdown; `runNow()` sweeps at once or joins the sweep in progress. */
export function startRedeliverySweeper(opts: RedeliverySweeperOptions): Periodic<SweepResult> {
  const logger = opts.logger.child({ component: "redelivery" });
  let first = true;
  return startPeriodic({
    name: "redelivery",
    intervalMs: opts.intervalMs,
    firstDelayMs: Math.min(opts.intervalMs, FIRST_SWEEP_DELAY_MS),
    logger,
    run: async (signal) => {
      const lookbackMs = sweepLookbackMs(opts.intervalMs, first);
      first = false;
      try {
        return await sweepRedeliveries({
          app: await opts.octokits.appOctokit(),
          store: opts.store,
          isKnown: opts.isKnown,
          logger,
          lookbackMs,
          signal,
          ...(opts.maxRequests !== undefined ? { maxRequests: opts.maxRequests } : {}),
        });
      } catch (error) {
        if (!signal.aborted)
          logger.warn({ error: safeErrorMessage(error) }, "redelivery sweep failed; trying again at the next interval");
        return nothing();
      }
    },
  });
}
