// The engine: a bounded worker pool over the durable queue. It leases due deliveries and
// tasks, runs them through the handler modules, records outcomes and decides retries.
// Intake only records; everything else happens here, after the 2xx.
import type { Logger } from "pino";
import type { HandlerModule, InstallationOctokit, Outcome, Scheduler, ServiceContext } from "./handler.js";
import type { CheckReporter } from "./checks/types.js";
import type { StewardConfig } from "./config/types.js";
import type { OctokitFactory } from "./api/types.js";
import type { PolicyLoader } from "./policy/types.js";
import { handlerStore, type StewardStore } from "./store/contract.js";
import type { DeliveryIntake, IncomingDelivery } from "./queue/types.js";
import type { ClaimedDelivery, ClaimedTask } from "./queue/engine-types.js";
import { decideDelivery, decideTask, defaultRetry, type RetryPolicy } from "./queue/retry.js";
import { serviceContext as buildServiceContext, taskContext, type ContextDeps } from "./router/contexts.js";
import { runDelivery } from "./router/run-delivery.js";
import { errorText, redactSecrets } from "./router/redact.js";
import { runWithSignal } from "./lifecycle/abort-scope.js";
import type { Backoff } from "./lifecycle/backoff.js";
import { startHandlers, type HandlerStarts, type StartState } from "./lifecycle/handler-starts.js";

export interface Engine {
  intake: DeliveryIntake;
  start(): Promise<void>;
  /** Stop claiming; let in-flight work finish within `timeoutMs`, else hand it back to the queue. */
  stop(timeoutMs: number): Promise<void>;
  /** Resolves when nothing is queued, awaiting a retry or running, and no task is due now. */
  idle(): Promise<void>;
  /** Run a stored delivery again through every handler. */
  replay(deliveryId: string): Promise<void>;
  /** Schedules for the handler named by the key's prefix: `rerun:abc` is the `rerun` module's task `abc`. */
  scheduler: Scheduler;
  serviceContext: ServiceContext;
  /** The scheduler a handler module gets in its contexts. */
  schedulerFor(handler: string): Scheduler;
  /** Each handler's start (they run in the background after start()). */
  handlerStarts(): ReturnType<HandlerStarts["status"]>;
}

export interface EngineOptions {
  config: StewardConfig;
  store: StewardStore;
  handlers: HandlerModule<any>[];
  octokits: OctokitFactory;
  policies: PolicyLoader;
  logger: Logger;
  checkReporterFor: (octokit: InstallationOctokit, deliveryId?: string) => CheckReporter;
  observe?: {
    outcome(handler: string, status: Outcome["status"], seconds: number): void;
    handlerStart?(handler: string, state: StartState): void;
  };
  /**
   * Aborted when the shutdown bound is reached: the API client given to handlers refuses every
   * request from then on and cuts off those in flight.
   */
  hardStop?: AbortController;
  /** Backoff of handler starts that failed (default 1 s doubling to 5 min). */
  startBackoff?: Backoff;
  /** Backoff between attempts (attempt count comes from config.maxAttempts). */
  retry?: { baseMs: number; maxMs: number };
  /** Lease of a running delivery or task; renewed every third of it while it runs. */
  leaseMs?: number;
  /** Longest sleep between looks at the queue (work queued by other processes, e.g. `steward deliveries replay`). */
  pollMs?: number;
  /** How long `done` deliveries are kept (default 14 days); dead ones are kept until replayed. */
  retentionMs?: number;
}

const maintenanceIntervalMs = 3_600_000;
/** After the hard stop, how long runs get to notice their refused requests before the store closes. */
const HARD_STOP_GRACE_MS = 1_000;

type Work = { kind: "delivery"; claim: ClaimedDelivery } | { kind: "task"; claim: ClaimedTask };

export function createEngine(opts: EngineOptions): Engine {
  const { config, store, logger } = opts;
  const log = logger.child({ component: "engine" });
  const retry: RetryPolicy = { maxAttempts: Math.max(1, config.maxAttempts), ...(opts.retry ?? defaultRetry) };
  const leaseMs = opts.leaseMs ?? 60_000;
  const pollMs = opts.pollMs ?? 1_000;
  const retentionMs = opts.retentionMs ?? 14 * 86_400_000;
  const concurrency = Math.max(1, config.concurrency);
  const handlersByName = new Map<string, HandlerModule<any>>();
  for (const h of opts.handlers) {
    if (handlersByName.has(h.name)) throw new Error(`two handler modules are named "${h.name}"`);
    handlersByName.set(h.name, h);
  }
  const secrets = [config.privateKey, ...config.webhookSecrets, config.reviewerToken ?? ""];

  const schedulers = new Map<string, Scheduler>();
  function schedulerFor(handler: string): Scheduler {
    let s = schedulers.get(handler);
    if (!s) {
      s = {
        schedule: async (request) => {
          await store.tasks.scheduleTask(handler, request);
          wake();
        },
        cancel: (key) => store.tasks.cancelTask(handler, key),
      };
      schedulers.set(handler, s);
    }
    return s;
  }
  function splitKey(key: string): { handler: string; key: string } {
    const i = key.indexOf(":");
    const handler = i > 0 ? key.slice(0, i) : "";
    if (!handlersByName.has(handler)) throw new Error(`task key "${key}" does not start with a handler name and ":"`);
    return { handler, key: key.slice(i + 1) };
  }
  const scheduler: Scheduler = {
    schedule: async (request) => {
      const { handler, key } = splitKey(request.key);
      return schedulerFor(handler).schedule({ ...request, key });
    },
    cancel: async (fullKey) => {
      const { handler, key } = splitKey(fullKey);
      return schedulerFor(handler).cancel(key);
    },
  };

  const deps: ContextDeps = {
    config,
    // Handlers get the kv part's handler methods only, never the queue behind them.
    store: handlerStore(store.kv),
    octokits: opts.octokits,
    policies: opts.policies,
    checkReporterFor: opts.checkReporterFor,
    schedulerFor,
  };
  // Fires when shutdown begins: every running piece of work is told to stop between steps.
  const shutdown = new AbortController();
  const service = buildServiceContext(deps, logger, scheduler, shutdown.signal);
  let starts: HandlerStarts | undefined;

  // ---- worker pool ------------------------------------------------------------------------
  let state: "new" | "running" | "stopping" | "stopped" = "new";
  const inflight = new Map<string, Promise<void>>();
  /** Workers promised to deliveries being recorded leased (intake fast path), not yet launched. */
  let reserved = 0;
  /** Due deliveries may be waiting in the queue: new ones queue behind them rather than jump ahead. */
  let backlogged = true;
  let pumping = false;
  let pumpAgain = false;
  let preferTask = false;
  let timer: NodeJS.Timeout | undefined;
  let wakeQueued = false;
  let idleWaiters: (() => void)[] = [];
  const heartbeats = new Map<string, NodeJS.Timeout>();
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

  // A pump in a later turn of the event loop (setImmediate), never inside the caller's chain:
  // handler runs complete in microtasks, and a pump chained onto them could run the whole
  // backlog in one turn and hold the HTTP intake off until it is done.
  function wake(): void {
    if (state === "new" || state === "stopped" || wakeQueued) return;
    wakeQueued = true;
    setImmediate(() => {
      wakeQueued = false;
      void pump();
    });
  }

  async function claimDeliveries(max: number): Promise<ClaimedDelivery[]> {
    return store.deliveries.claimDeliveries(leaseMs, max);
  }

  /** Work for up to `free` workers. */
  async function claimRound(free: number): Promise<Work[]> {
    // Alternate which kind goes first so a flood of deliveries cannot starve due tasks.
    preferTask = !preferTask;
    const work: Work[] = [];
    const claimTask = async () => {
      const claim = await store.tasks.claimTask(leaseMs);
      if (claim) work.push({ kind: "task", claim });
    };
    if (preferTask) await claimTask();
    if (work.length < free) for (const claim of await claimDeliveries(free - work.length)) work.push({ kind: "delivery", claim });
    if (!preferTask && work.length < free) await claimTask();
    return work;
  }

  async function pump(): Promise<void> {
    if (state === "stopped") return; // the store may be closed already
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        while (state === "running" && inflight.size + reserved < concurrency) {
          const free = concurrency - inflight.size - reserved;
          const work = await claimRound(free);
          for (const w of work) launch(w);
          if (work.length < free) {
            backlogged = false;
            break;
          }
        }
      } while (pumpAgain && state === "running");
      await armTimer();
      await settleIdle();
    } catch (e) {
      log.error({ err: e }, "queue pump failed; retrying");
      armTimerIn(pollMs);
    } finally {
      pumping = false;
    }
  }

  function armTimerIn(ms: number): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (state !== "running") return;
    timer = setTimeout(() => void pump(), Math.max(1, ms));
    timer.unref();
  }

  async function armTimer(): Promise<void> {
    if (inflight.size >= concurrency) return armTimerIn(pollMs); // a finishing run pumps again
    const next = await store.leases.nextDueAt();
    const wait = next ? next.getTime() - Date.now() : pollMs;
    armTimerIn(Math.min(pollMs, Math.max(1, wait)));
  }

  async function settleIdle(): Promise<void> {
    if (idleWaiters.length === 0 || inflight.size > 0) return;
    if ((await store.leases.pendingWork(new Date())) > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  function launch(work: Work): void {
    const token = work.claim.token;
    // Lost when another process took the lease (this one stalled past it): stop, it runs there.
    const lost = new AbortController();
    const signal = AbortSignal.any([shutdown.signal, lost.signal]);
    const heartbeat = setInterval(() => {
      store
        .leases.renewLease(token, leaseMs)
        .then((held) => {
          if (!held && state === "running") lost.abort(new Error("lease lost"));
        })
        .catch((e) => log.warn({ err: e }, "lease renewal failed"));
    }, Math.max(10, Math.floor(leaseMs / 3)));
    heartbeat.unref();
    heartbeats.set(token, heartbeat);
    const run = runWithSignal(signal, () => (work.kind === "delivery" ? runClaimedDelivery(work.claim, signal) : runClaimedTask(work.claim, signal)))
      .catch((e) => {
        // After the shutdown bound the store is closed; what a late run failed to write is moot.
        if (state === "stopped") log.debug({ err: e }, `${work.kind} run ended after shutdown`);
        else log.error({ err: e }, `${work.kind} run failed unexpectedly`);
      })
      .finally(() => {
        clearInterval(heartbeat);
        heartbeats.delete(token);
        inflight.delete(token);
        // A delivery run always waited for its finish to be written (a group commit in a later
        // turn, or a network round trip), so claiming the next one right here cannot chain the
        // backlog into one turn; a task's run may not have, so it waits for the next turn.
        if (work.kind === "delivery") void pump();
        else wake();
      });
    inflight.set(token, run);
  }

  // ---- one delivery -----------------------------------------------------------------------
  async function runClaimedDelivery(claim: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    const d = claim.delivery;
    const dlog = logger.child({
      delivery: d.id,
      event: d.action ? `${d.event}.${d.action}` : d.event,
      installation: d.installationId,
      repository: d.repository,
    });
    // Outcome writes are not awaited one by one: each is asked for as soon as it is known, and
    // the finish below then shares their group commit instead of waiting a commit for them. If
    // one failed while the finish held, the run of that handler is lost from the record only:
    // a retry runs it again, as after a crash between its effect and its record.
    const outcomeWrites: Promise<void>[] = [];
    const outcomes = await runDelivery(
      {
        ...deps,
        log: dlog,
        signal,
        observe: opts.observe,
        recordOutcome: (handler, outcome, seconds) => {
          const write = store.deliveries.recordOutcome(claim.token, d.id, handler, outcome, seconds).then((held) => {
            if (!held) dlog.warn({ handler }, "lease lost; outcome not recorded (the delivery runs again)");
          });
          write.catch(() => undefined); // settled below; a failure must not go unhandled meanwhile
          outcomeWrites.push(write);
          return Promise.resolve();
        },
      },
      opts.handlers,
      claim,
    );
    if (signal.aborted && outcomes.some((o) => o.status === "failed")) {
      await Promise.allSettled(outcomeWrites);
      await store.leases.releaseLease(claim.token);
      dlog.info("delivery stopped before it finished; it is back in the queue");
      return;
    }
    const decision = decideDelivery(outcomes, d.attempts, retry, new Date());
    const finished = store.deliveries.finishDelivery(claim.token, d.id, decision);
    finished.catch(() => undefined);
    await Promise.all(outcomeWrites);
    const held = await finished;
    if (!held) return;
    if (decision.status === "failed") {
      dlog.warn({ attempt: d.attempts, retryAt: decision.retryAt, error: decision.lastError }, "delivery will be retried");
    } else if (decision.status === "dead") {
      dlog.error({ attempts: d.attempts, error: decision.lastError }, "delivery parked as dead");
    } else {
      dlog.debug({ handlers: outcomes.length }, "delivery done");
    }
  }

  // ---- one task ---------------------------------------------------------------------------
  async function runClaimedTask(claim: ClaimedTask, signal: AbortSignal): Promise<void> {
    const t = claim.task;
    const tlog = logger.child({ task: t.key, handler: t.handler, installation: t.installationId });
    const handler = handlersByName.get(t.handler);
    const attempt = t.attempts + 1;
    let error: string | undefined;
    let retryable = true;
    if (!handler?.onTask) {
      error = `no loaded handler module "${t.handler}" runs tasks`;
      retryable = false;
    } else {
      const started = performance.now();
      try {
        const octokit = t.installationId === undefined ? undefined : await opts.octokits.octokitFor(t.installationId);
        const ctx = taskContext(deps, handler, t, { octokit, log: tlog, attempt, signal });
        const result = await handler.onTask(ctx);
        if (result?.status === "failed") {
          error = result.error;
          retryable = result.retryable !== false;
        }
      } catch (e) {
        error = errorText(e);
      }
      const seconds = (performance.now() - started) / 1000;
      opts.observe?.outcome(t.handler, error === undefined ? "done" : "failed", seconds);
    }
    if (error !== undefined && signal.aborted) {
      // Stopped, not failed: the task goes back as it was and resumes where it left off.
      await store.leases.releaseLease(claim.token);
      tlog.info("task stopped before it finished; it is back in the queue");
      return;
    }
    if (error !== undefined) error = redactSecrets(error, secrets);
    const decision = decideTask(error, retryable, attempt, retry, new Date());
    await store.tasks.finishTask(claim, decision);
    if (decision.status === "retry") tlog.warn({ attempt, retryAt: decision.retryAt, error }, "task will be retried");
    else if (decision.status === "dead") tlog.error({ attempt, error }, "task parked as dead");
  }

  // ---- lifecycle --------------------------------------------------------------------------
  /**
   * A delivery arriving while a worker is free and nothing is queued is recorded already leased
   * and handed to the worker with the payload the intake parsed: no claim, no reading it back,
   * no second parse. Otherwise it is queued and the pump claims it in order.
   */
  async function recordAndRun(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    reserved++;
    let claim: ClaimedDelivery | "duplicate";
    try {
      claim = await store.deliveries.recordLeased(delivery, leaseMs);
    } finally {
      reserved--;
    }
    if (claim === "duplicate") return claim;
    // Shutdown began meanwhile: the run would outlive stop(); the queue keeps it for the next start.
    if (state === "running") launch({ kind: "delivery", claim });
    else await store.leases.releaseLease(claim.token);
    return "recorded";
  }

  const intake: DeliveryIntake = {
    record: async (delivery) => {
      // Taken off the caller's object: the largest object of a request must not live on with the
      // request (past a scavenge it is promoted, and the old generation grows) when no run uses it.
      const { parsed } = delivery;
      delivery.parsed = undefined;
      if (state === "running" && !backlogged && inflight.size + reserved < concurrency) {
        return recordAndRun({ ...delivery, parsed });
      }
      const result = await store.deliveries.record(delivery);
      if (result === "recorded") {
        backlogged = true;
        wake();
      }
      return result;
    },
    ready: async () => state !== "stopping" && state !== "stopped" && (await store.ready()),
    depth: () => store.deliveries.depth(),
  };

  return {
    intake,
    scheduler,
    serviceContext: service,
    schedulerFor,
    handlerStarts: () => starts?.status() ?? [],
    async start() {
      if (state !== "new") throw new Error(`engine cannot start: it is ${state}`);
      const recovered = await store.leases.recoverOrphans();
      if (recovered > 0) log.warn({ recovered }, "took back work leased by a process that died");
      await housekeeping();
      maintenance = setInterval(() => void housekeeping(), maintenanceIntervalMs);
      maintenance.unref();
      state = "running";
      log.info({ concurrency, handlers: opts.handlers.map((h) => h.name) }, "engine started");
      starts = startHandlers({
        handlers: opts.handlers,
        contextFor: (h, hlog) => buildServiceContext(deps, hlog, schedulerFor(h.name), shutdown.signal),
        signal: shutdown.signal,
        logger,
        describe: (e) => redactSecrets(errorText(e), secrets),
        ...(opts.startBackoff ? { backoff: opts.startBackoff } : {}),
        ...(opts.observe?.handlerStart ? { observe: opts.observe.handlerStart } : {}),
      });
      void pump();
    },
    async stop(timeoutMs) {
      if (state === "stopped") return;
      state = "stopping";
      shutdown.abort(new Error("shutting down"));
      if (timer) clearTimeout(timer);
      timer = undefined;
      clearInterval(maintenance);
      if (inflight.size > 0) {
        let bound: NodeJS.Timeout | undefined;
        const timedOut = new Promise<"timeout">((resolve) => {
          bound = setTimeout(() => resolve("timeout"), Math.max(0, timeoutMs));
        });
        const finished = Promise.allSettled([...inflight.values()]).then(() => "finished" as const);
        const result = await Promise.race([finished, timedOut]);
        clearTimeout(bound);
        if (result === "timeout") {
          const tokens = [...inflight.keys()];
          for (const token of tokens) {
            clearInterval(heartbeats.get(token));
            await store.leases.releaseLease(token);
          }
          // No request leaves from here on; runs see their requests refused and end.
          opts.hardStop?.abort(new Error("shutdown bound reached"));
          log.warn({ released: tokens.length }, "shutdown bound reached; unfinished work returned to the queue");
          const ended = new Promise<void>((resolve) => {
            bound = setTimeout(resolve, HARD_STOP_GRACE_MS);
            bound.unref();
          });
          await Promise.race([Promise.allSettled([...inflight.values()]), ended]);
          clearTimeout(bound);
        }
      }
      state = "stopped";
      log.info("engine stopped");
    },
    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        if (!pumping) void settleIdle();
      });
    },
    async replay(deliveryId) {
      const ok = await store.deliveries.replayDelivery(deliveryId);
      if (!ok) {
        const found = await store.deliveries.getDelivery(deliveryId);
        throw new Error(found ? `delivery ${deliveryId} is running; replay it when it has finished` : `no stored delivery ${deliveryId}`);
      }
      wake();
    },
  };
}
