// Intake first: while deliveries flood in faster than this process can both answer and work
// them off, the worker pool steps back to a small share of the event loop, so answers stay
// fast (GitHub gives a delivery 10 s) and the backlog, already durable, is worked off once
// the flood ends. Outside a flood the pool runs at full speed: the rule only engages when the
// loop is saturated while deliveries flood in, and lets go as soon as either ends.
import { performance } from "node:perf_hooks";

export interface IntakeFirstSettings {
  /** Share of wall time the pool may keep while it yields (0 < share <= 1; 1 never yields). */
  share: number;
  /** Enter: the loop was at least this busy over a sample while a flood arrived (`enterArrivals`). */
  enterUtilisation: number;
  /** Leave: the loop was less busy than this, or fewer than `leaveArrivals` arrived in a sample. */
  leaveUtilisation: number;
  /**
   * Enter only when at least this many deliveries arrived in a sample (a flood), leave when fewer
   * than `leaveArrivals` did. A loop busy with the pool's own work (a job log matched, a sync)
   * while deliveries trickle in is not a flood: stepping back then would only slow that work.
   */
  enterArrivals: number;
  leaveArrivals: number;
}

/** Per 50 ms sample: a flood is 500 deliveries a second or more; it is over below 100 a second. */
export const DEFAULT_INTAKE_FIRST: IntakeFirstSettings = { share: 0.1, enterUtilisation: 0.9, leaveUtilisation: 0.5, enterArrivals: 25, leaveArrivals: 5 };

/** One sample: how busy the event loop was (0..1) and how many deliveries arrived meanwhile. */
export interface LoadSample {
  utilisation: number;
  arrivals: number;
}

/** Pure: whether the pool yields after `sample`, given whether it yielded before. */
export function shouldYield(yielding: boolean, sample: LoadSample, s: IntakeFirstSettings): boolean {
  if (s.share >= 1) return false;
  if (yielding) return sample.arrivals >= s.leaveArrivals && sample.utilisation >= s.leaveUtilisation;
  return sample.arrivals >= s.enterArrivals && sample.utilisation >= s.enterUtilisation;
}

/** Pure: how long to wait after a run of `ranMs` so runs keep `share` of the time. */
export function pauseAfter(ranMs: number, share: number): number {
  return share >= 1 ? 0 : (Math.max(0, ranMs) * (1 - share)) / share;
}

export interface IntakeFirst {
  /** The intake recorded a delivery. */
  arrived(): void;
  /** The pool runs one piece of work at a time, paced, and new deliveries queue. */
  yielding(): boolean;
  /** Milliseconds before the pool may launch again (0: now). */
  launchDelay(now: number): number;
  /** A run took `ranMs` of wall time and ended at `now`: while yielding, the next launch waits. */
  ran(ranMs: number, now: number): void;
  /** `listener` hears each change (the engine wakes the pool when the intake lets go). */
  onChange(listener: (yielding: boolean) => void): void;
  /** Takes a sample and decides (the timer started by `start` calls it every `sampleMs`). */
  sample(): void;
  start(): void;
  stop(): void;
}

export function createIntakeFirst(
  settings: IntakeFirstSettings = DEFAULT_INTAKE_FIRST,
  opts: { sampleMs?: number; measure?: () => number } = {},
): IntakeFirst {
  const sampleMs = opts.sampleMs ?? 50;
  const measure = opts.measure ?? loopUtilisation();
  let arrivals = 0;
  let yielding = false;
  let nextLaunchAt = 0;
  let timer: NodeJS.Timeout | undefined;
  const listeners: ((yielding: boolean) => void)[] = [];

  function sample(): void {
    const next = shouldYield(yielding, { utilisation: measure(), arrivals }, settings);
    arrivals = 0;
    if (next === yielding) return;
    yielding = next;
    if (!yielding) nextLaunchAt = 0;
    for (const l of listeners) l(yielding);
  }

  return {
    arrived: () => void arrivals++,
    yielding: () => yielding,
    launchDelay: (now) => (yielding ? Math.max(0, nextLaunchAt - now) : 0),
    ran(ranMs, now) {
      if (yielding) nextLaunchAt = now + pauseAfter(ranMs, settings.share);
    },
    sample,
    onChange: (listener) => void listeners.push(listener),
    start() {
      if (timer || settings.share >= 1) return;
      timer = setInterval(sample, sampleMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
      yielding = false;
      nextLaunchAt = 0;
    },
  };
}

/** The event loop's utilisation since the last call (Node's own measure: time not idle in the poll phase). */
function loopUtilisation(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const delta = performance.eventLoopUtilization(now, last);
    last = now;
    return delta.utilization;
  };
}
