// The worker pool: up to `concurrency` runs at once. It claims due work from the queue when
// woken (new work, a finished run) or when its timer fires (the next due time, or the poll
// that notices work queued by other processes), alternating deliveries and tasks.
import type { Logger } from "pino";
import type { StewardStore } from "../store/contract.js";
import { runWithSignal } from "../lifecycle/abort-scope.js";
import { TokenTable } from "./token-table.js";
import type { LeaseKeeper } from "./leases.js";
import type { Work } from "./types.js";

export type PoolState = "new" | "running" | "stopping" | "stopped";

export interface WorkerPool {
  state(): PoolState;
  start(): void;
  /** Claim soon (in a later turn of the event loop). */
  wake(): void;
  /** Stop claiming and tell running work to stop (the caller aborts the shared signal). */
  beginStop(): void;
  /** Waits for running work up to `ms`: "timeout" when some is still running. */
  drain(ms: number): Promise<"finished" | "timeout">;
  /** Tokens of the leases of work still running. */
  running(): string[];
  finishStop(): void;
  idle(): Promise<void>;
}

export function createWorkerPool(opts: {
  store: Pick<StewardStore, "deliveries" | "tasks" | "leases">;
  leases: LeaseKeeper;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  log: Logger;
  /** Fires when shutdown begins: every running piece of work is told to stop between steps. */
  shutdown: AbortSignal;
  /** True while everything is paused: nothing is claimed, and the queue is looked at again each poll. */
  paused?: () => Promise<boolean>;
  /**
   * Runs `work`. A delivery's run calls `finishing` once it has asked the store for its finish: its
   * slot is then free (what is left is the store's commit), and the next claim may go with that finish.
   */
  run(work: Work, signal: AbortSignal, finishing: () => void): Promise<void>;
}): WorkerPool {
  const { store, concurrency, leaseMs, pollMs, log } = opts;
  let state: PoolState = "new";
  /** Running work by lease token: its run, and the controller its signal comes from. */
  const inflight = new TokenTable<{ run: Promise<void>; controller: AbortController }>();
  /** Runs in `inflight` that asked for their finish: their slots are free. */
  let finishing = 0;
  const busy = () => inflight.size - finishing;
  let pumping = false;
  let pumpAgain = false;
  let preferTask = false;
  let timer: NodeJS.Timeout | undefined;
  let wakeQueued = false;
  let idleWaiters: (() => void)[] = [];
  // Running work is told to stop through one listener on the shutdown signal, not one a run.
  opts.shutdown.addEventListener(
    "abort",
    () => {
      for (const { controller } of inflight.values()) controller.abort(opts.shutdown.reason);
    },
    { once: true },
  );

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

  /** Work for up to `free` workers; `more` when another round may find more due now. */
  async function claimRound(free: number): Promise<{ work: Work[]; more: boolean }> {
    // Alternate which kind goes first so a flood of deliveries cannot starve due tasks. A task going
    // first is claimed beside the deliveries, for the slot it may take, rather than before them: the
    // deliveries' claim is then asked in this turn, where a store may send it with the finishes of
    // the runs that freed the slots (one transaction for both on PostgreSQL).
    preferTask = !preferTask;
    const work: Work[] = [];
    const claimTask = async () => {
      const claim = await store.tasks.claimTask(leaseMs);
      if (claim) work.push({ kind: "task", claim });
    };
    const wanted = preferTask ? free - 1 : free;
    const [, deliveries] = await Promise.all([
      preferTask ? claimTask() : undefined,
      wanted > 0 ? store.deliveries.claimDeliveries(leaseMs, wanted) : [],
    ]);
    for (const claim of deliveries) work.push({ kind: "delivery", claim });
    if (!preferTask && work.length < free) await claimTask();
    // The slot kept for a task that was not due: the next round (deliveries first) may fill it.
    return { work, more: work.length === free || (preferTask && deliveries.length === wanted) };
  }

  async function pump(): Promise<void> {
    if (state === "stopped") return; // the store may be closed already
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      let paused = false;
      do {
        pumpAgain = false;
        paused = (await opts.paused?.()) === true;
        while (!paused && state === "running" && busy() < concurrency) {
          const { work, more } = await claimRound(concurrency - busy());
          for (const w of work) launch(w);
          if (!more) break;
        }
      } while (pumpAgain && state === "running" && !paused);
      // Paused, due work would set the timer to "now" again and again: poll instead.
      if (paused) armTimerIn(pollMs);
      else await armTimer();
      await settleIdle();
    } catch (e) {
      log.error({ err: e }, "queue pump failed; retrying");
      armTimerIn(pollMs);
    } finally {
      pumping = false;
      // A wake-up that came while this pump was past its claim loop (its timer firing during the
      // store's answer to nextDueAt or pendingWork, a run finishing) was only noted: claim for it now,
      // or it is lost and due work waits for the next unrelated wake-up.
      if (pumpAgain) wake();
    }
  }

  function clearTimer(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
  }

  function armTimerIn(ms: number): void {
    clearTimer();
    if (state !== "running") return;
    timer = setTimeout(
      () => {
        timer = undefined;
        void pump();
      },
      Math.max(1, ms),
    );
    timer.unref();
  }

  async function armTimer(): Promise<void> {
    if (busy() >= concurrency) return armTimerIn(pollMs); // a finishing run pumps again
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
    // One controller a run, aborted by the shutdown (the listener above) or a lost lease.
    const controller = new AbortController();
    const { signal } = controller;
    if (opts.shutdown.aborted) controller.abort(opts.shutdown.reason);
    opts.leases.keep(token, (reason) => controller.abort(reason));
    let freed = false;
    const finished = () => {
      if (freed) return;
      freed = true;
      finishing++;
      // In a later turn: the store's finish is asked for in this one, and the claim for the slot
      // may join it; a claim chained onto this run could run the whole backlog in one turn.
      wake();
    };
    const run = runWithSignal(signal, () => opts.run(work, signal, finished))
      .catch((e) => {
        // After the shutdown bound the store is closed; what a late run failed to write is moot.
        if (state === "stopped") log.debug({ err: e }, `${work.kind} run ended after shutdown`);
        else log.error({ err: e }, `${work.kind} run failed unexpectedly`);
      })
      .finally(() => {
        opts.leases.drop(token);
        inflight.delete(token);
        if (freed) {
          // Its slot was handed on when it asked for its finish; someone waiting for idleness
          // is answered by a pump once nothing runs.
          finishing--;
          if (inflight.size === 0 && idleWaiters.length > 0) wake();
          return;
        }
        // A delivery run always waited for its finish to be written (a group commit in a later
        // turn, or a network round trip), so claiming the next one right here cannot chain the
        // backlog into one turn; a task's run may not have, so it waits for the next turn.
        if (work.kind === "delivery") void pump();
        else wake();
      });
    inflight.set(token, { run, controller });
  }

  return {
    state: () => state,
    start() {
      state = "running";
      void pump();
    },
    wake,
    beginStop() {
      state = "stopping";
      clearTimer();
    },
    async drain(ms) {
      if (inflight.size === 0) return "finished";
      let bound: NodeJS.Timeout | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        bound = setTimeout(() => resolve("timeout"), Math.max(0, ms));
      });
      const finished = Promise.allSettled(inflight.values().map((w) => w.run)).then(() => "finished" as const);
      const result = await Promise.race([finished, timedOut]);
      clearTimeout(bound);
      return result;
    },
    running: () => inflight.keys(),
    finishStop() {
      state = "stopped";
    },
    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        if (!pumping) void settleIdle();
      });
    },
  };
}
