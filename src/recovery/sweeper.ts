// Runs the redelivery sweep on start and then every interval. A sweep never overlaps the
// previous one (a slow API must not stack sweeps), and a failing sweep is logged, never
// thrown: recovery must not take the service down.
import type { Logger } from "pino";
import type { OctokitFactory } from "../api/types.js";
import type { Store } from "../store/types.js";
import { safeErrorMessage } from "../log/redact.js";
import { sweepRedeliveries, type SweepResult } from "./redeliver.js";

/** GitHub keeps deliveries for three days; older ones cannot be redelivered anyway. */
export const DEFAULT_LOOKBACK_MS = 3 * 86_400_000;

export interface RedeliverySweeperOptions {
  octokits: OctokitFactory;
  store: Store;
  /** True when Steward already recorded this delivery id (it reached us; no redelivery needed). */
  isKnown(guid: string): Promise<boolean>;
  logger: Logger;
  intervalMs: number;
  lookbackMs?: number;
  /** Upper bound of redelivery requests per sweep. */
  maxRequests?: number;
}

export interface RedeliverySweeper {
  stop(): void;
  /** Sweep now, or join the sweep already running. Never rejects. */
  runNow(): Promise<SweepResult>;
}

const EMPTY: SweepResult = { scanned: 0, requested: [], alreadyAsked: 0, failed: [] };

export function startRedeliverySweeper(opts: RedeliverySweeperOptions): RedeliverySweeper {
  const log = opts.logger.child({ component: "redelivery-sweeper" });
  const lookbackMs = opts.lookbackMs ?? DEFAULT_LOOKBACK_MS;
  let running: Promise<SweepResult> | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  async function sweep(): Promise<SweepResult> {
    try {
      const app = await opts.octokits.appOctokit();
      return await sweepRedeliveries({
        app,
        store: opts.store,
        isKnown: opts.isKnown,
        logger: log,
        lookbackMs,
        ...(opts.maxRequests !== undefined ? { maxRequests: opts.maxRequests } : {}),
      });
    } catch (error) {
      log.warn({ error: safeErrorMessage(error) }, "redelivery sweep failed; trying again at the next interval");
      return { ...EMPTY, requested: [], failed: [] };
    }
  }

  function runNow(): Promise<SweepResult> {
    if (stopped) return Promise.resolve({ ...EMPTY, requested: [], failed: [] });
    running ??= sweep().finally(() => {
      running = undefined;
    });
    return running;
  }

  function schedule(): void {
    if (stopped) return;
    // Timed from the end of a sweep, so sweeps never overlap however slow one is.
    timer = setTimeout(() => void runNow().then(schedule), Math.max(1, opts.intervalMs));
    timer.unref();
  }

  void runNow().then(schedule);

  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
    runNow,
  };
}
