// The engine: a bounded worker pool over the durable queue. It leases due deliveries and
// tasks, runs them through the handler modules, saves outcomes and decides retries.
// The intake only records deliveries; everything else happens here, after the 2xx. This file wires the
// parts together and owns the lifecycle (start, graceful and hard stop, housekeeping).
import { handlerStore } from "../store/contract.js";
import type { HandlerModule } from "../handler.js";
import { defaultRetry, type RetryPolicy } from "./retry.js";
import { serviceContext as buildServiceContext, type ContextDeps } from "../dispatch/contexts.js";
import { safeErrorMessage } from "../log/redact.js";
import { startHandlers, type HandlerStarts } from "./handler-starts.js";
import { createSchedulers, followClockMoves } from "./scheduler.js";
import { systemClock } from "../lifecycle/clock.js";
import { createLeaseKeeper } from "./leases.js";
import { createWorkerPool } from "./pool.js";
import { createEnqueue } from "./enqueue.js";
import { engineTakes, routeDelivery } from "../dispatch/route.js";
import { runClaimedDelivery } from "./delivery.js";
import { runClaimedTask } from "./task.js";
import { configSecrets } from "./run.js";
import { createApiCallLog } from "./api-calls.js";
import type { Engine, EngineOptions, Work } from "./types.js";
import { isHeld, pauseView, type PauseState } from "./pauses.js";

export type { Engine, EngineOptions, EngineObserver, Work } from "./types.js";

const maintenanceIntervalMs = 3_600_000;
/**
 * Work a pause of one handler or installation holds goes back to the queue due this much later,
 * and is looked at again then: the cost of a held backlog is one claim per item this often.
 */
export const PAUSE_HOLD_MS = 5_000;
/** After the hard stop, how long runs get to notice their refused requests before the store closes. */
const HARD_STOP_GRACE_MS = 1_000;

export function createEngine(opts: EngineOptions): Engine {
  const { config, store, logger } = opts;
  const log = logger.child({ component: "engine" });
  const retry: RetryPolicy = { maxAttempts: Math.max(1, config.maxAttempts), ...(opts.retry ?? defaultRetry) };
  const leaseMs = opts.leaseMs ?? 60_000;
  const retentionMs = opts.retentionMs ?? 14 * 86_400_000;
  const concurrency = Math.max(1, config.concurrency);
  const handlersByName = new Map<string, HandlerModule<any>>();
  for (const h of opts.handlers) {
    if (handlersByName.has(h.name)) throw new Error(`two handler modules are named "${h.name}"`);
    handlersByName.set(h.name, h);
  }

  // Fires when shutdown begins: every running piece of work is told to stop between steps.
  const shutdown = new AbortController();
  const clock = opts.clock ?? systemClock;
  let unfollowClock: (() => void) | undefined;
  const { schedulerFor } = createSchedulers(store.tasks, () => pool.wake());
  const deps: ContextDeps = {
    config,
    // Handlers get the kv part's handler methods only, never the queue behind them.
    store: handlerStore(store.kv),
    octokits: opts.octokits,
    policies: opts.policies,
    checkReporterFor: opts.checkReporterFor,
    schedulerFor,
    clock,
  };
  const runDeps = { ...deps, queue: store, observe: opts.observe, retry, logger };
  const deliveryDeps = { ...runDeps, handlers: opts.handlers, apiCalls: createApiCallLog(store.kv, retentionMs, log) };
  const taskDeps = { ...runDeps, handlersByName };
  const pauses = pauseView(store.kv);
  const held = (work: Work, state: PauseState): boolean =>
    work.kind === "delivery"
      ? isHeld(
          state,
          work.claim.delivery.installationId,
          routeDelivery(opts.handlers, work.claim.delivery, config).map((h) => h.name),
        )
      : isHeld(state, work.claim.task.installationId, [work.claim.task.handler]);
  // Work another replica queued (a backend that signals it): claimed now, not at the next poll.
  store.onWork?.(() => pool.wake());
  const leases = createLeaseKeeper({ store: store.leases, leaseMs, log, running: () => pool.state() === "running" });
  const pool = createWorkerPool({
    store,
    leases,
    concurrency,
    leaseMs,
    pollMs: opts.pollMs ?? 1_000,
    log,
    shutdown: shutdown.signal,
    // Everything paused: nothing is claimed; the queue keeps its order for the resume.
    paused: async () => (await pauses.current()).all,
    run: async (work, signal, finishing) => {
      if (held(work, await pauses.current())) {
        await store.leases.releaseLease(work.claim.token, new Date(Date.now() + PAUSE_HOLD_MS));
        return;
      }
      return work.kind === "delivery"
        ? runClaimedDelivery(deliveryDeps, work.claim, signal, finishing)
        : runClaimedTask(taskDeps, work.claim, signal);
    },
  });
  let starts: HandlerStarts | undefined;
  let maintenance: NodeJS.Timeout | undefined;

  async function housekeeping(): Promise<void> {
    try {
      const deliveries = await store.deliveries.purgeFinished(new Date(Date.now() - retentionMs));
      const entries = await store.kv.purgeExpired();
      if (deliveries + entries > 0) log.info({ deliveries, entries }, "purged finished deliveries and expired entries");
    } catch (e) {
      log.warn({ err: e }, "housekeeping failed");
    }
  }

  return {
    // A push that may touch a policy file runs even when no handler takes it: its run drops the cached policy.
    intake: createEnqueue(
      store,
      pool,
      (d) => engineTakes(d) || routeDelivery(opts.handlers, d, config).length > 0,
      opts.readinessProbes,
    ),
    schedulerFor,
    handlerStarts: () => starts?.status() ?? [],
    async start() {
      if (pool.state() !== "new") throw new Error(`engine cannot start: it is ${pool.state()}`);
      const recovered = await store.leases.recoverOrphans();
      if (recovered > 0) log.warn({ recovered }, "took back work leased by a process that died");
      await housekeeping();
      maintenance = setInterval(() => void housekeeping(), maintenanceIntervalMs);
      maintenance.unref();
      log.info({ concurrency, handlers: opts.handlers.map((h) => h.name) }, "engine started");
      unfollowClock = followClockMoves(clock, store.tasks, () => pool.wake(), log);
      starts = startHandlers({
        handlers: opts.handlers,
        contextFor: (h, hlog) => buildServiceContext(deps, hlog, schedulerFor(h.name), shutdown.signal),
        signal: shutdown.signal,
        logger,
        describe: (e) => safeErrorMessage(e, configSecrets(config)),
        ...(opts.startBackoff ? { backoff: opts.startBackoff } : {}),
        ...(opts.observe?.handlerStart ? { observe: opts.observe.handlerStart } : {}),
        held: async (handler) => isHeld(await pauses.current(), undefined, [handler]),
        holdMs: PAUSE_HOLD_MS,
      });
      pool.start();
    },
    async stop(timeoutMs) {
      if (pool.state() === "stopped") return;
      unfollowClock?.();
      pool.beginStop();
      shutdown.abort(new Error("shutting down"));
      clearInterval(maintenance);
      if ((await pool.drain(timeoutMs)) === "timeout") {
        const tokens = pool.running();
        for (const token of tokens) await leases.giveBack(token);
        // No request leaves from here on; runs see their requests refused and end.
        opts.hardStop?.abort(new Error("shutdown bound reached"));
        log.warn({ released: tokens.length }, "shutdown bound reached; unfinished work returned to the queue");
        await pool.drain(HARD_STOP_GRACE_MS);
      }
      pool.finishStop();
      log.info("engine stopped");
    },
    idle: () => pool.idle(),
    pausesChanged() {
      pauses.forget();
      pool.wake();
    },
    async replay(deliveryId) {
      const ok = await store.deliveries.replayDelivery(deliveryId);
      if (!ok) {
        const found = await store.deliveries.getDelivery(deliveryId);
        throw new Error(
          found
            ? `delivery ${deliveryId} is running; replay it when it has finished`
            : `no stored delivery ${deliveryId}`,
        );
      }
      pool.wake();
    },
  };
}
