// Intake first: while deliveries flood in faster than this process can both answer and work
// them off, the worker pool steps back to a small share of the event loop, so answers stay
// fast (GitHub gives a delivery 10 s) and the backlog, already durable, is worked off once
// the flood ends. Outside a flood the pool runs at full speed: the rule only engages when the
// loop is mostly busy while deliveries flood in, and lets go when the flood ends. Mostly, not
// saturated: a sender that waits for each answer (one connection) never saturates the loop,
// yet once it is 70% busy most deliveries arrive while a run holds the loop, and each answer
// waits for it (measured at one connection: the pool left running at 80-95% busy answered
// 3,000-3,500 deliveries a second, stepping back 4,200-4,600). In between, the
// pool's share follows the loop: doubled while the loop has room (the intake alone does not fill
// it), halved back towards the setting when the loop is mostly busy again, so a long flood the
// intake alone cannot fill does not leave the backlog growing at a fixed small share.
// The floor is small (1%) because a run made during a flood is the dearest run there is: it
// holds the next sender's answer for its length, and its claim and finish are transactions of
// their own whose pages the spool's moves keep changing, nearly twice the CPU of the same run
// once the flood is over (analysis.md, stop 45). At one connection the answer rate fell with
// every step of the floor (10%: 0.84-0.91x Probot's, 2%: 0.92-1.00x, 1%: 0.99-1.08x), while the
// CPU a delivery, the drain included, fell with it.
import { performance } from "node:perf_hooks";

export interface IntakeFirstSettings {
  /** Share of wall time the pool keeps when it starts to yield, and never less (0 < share <= 1; 1 never yields). */
  share: number;
  /**
   * Enter: the loop was at least this busy over a sample while a flood arrived (`enterArrivals`).
   * While yielding, a sample this busy halves the pool's share (down to `share`).
   */
  enterUtilisation: number;
  /**
   * While yielding, a sample less busy than this has room: the pool's share doubles, and once it
   * would reach the whole loop the pool stops yielding.
   */
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
export const DEFAULT_INTAKE_FIRST: IntakeFirstSettings = { share: 0.01, enterUtilisation: 0.7, leaveUtilisation: 0.5, enterArrivals: 25, leaveArrivals: 5 };

/** One sample: how busy the event loop was (0..1) and how many deliveries arrived meanwhile. */
export interface LoadSample {
  utilisation: number;
  arrivals: number;
}

/** Whether the pool yields, and the share of wall time it keeps meanwhile. */
export interface IntakeFirstState {
  yielding: boolean;
  share: number;
}

/** Pure: the state after `sample`. */
export function nextState(state: IntakeFirstState, sample: LoadSample, s: IntakeFirstSettings): IntakeFirstState {
  const calm: IntakeFirstState = { yielding: false, share: s.share };
  if (s.share >= 1) return calm;
  if (!state.yielding) {
    return sample.arrivals >= s.enterArrivals && sample.utilisation >= s.enterUtilisation ? { yielding: true, share: s.share } : state;
  }
  if (sample.arrivals < s.leaveArrivals) return calm;
  // Still a flood. Judged by the loop's load with the pool at its current share: the pool held back
  // is why the loop is quieter now, so room means a larger share, not the end of yielding.
  if (sample.utilisation < s.leaveUtilisation) {
    const share = Math.min(1, state.share * 2);
    return share >= 1 ? calm : { yielding: true, share };
  }
  if (sample.utilisation >= s.enterUtilisation && state.share > s.share) return { yielding: true, share: Math.max(s.share, state.share / 2) };
  return state;
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
  /** The share of wall time the pool keeps while it yields. */
  share(): number;
  /** Milliseconds before the pool may launch again (0: now). */
  launchDelay(now: number): number;
  /** A run took `ranMs` of wall time (its claim included) and ended at `now`: while yielding, the next launch waits. */
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
  let state: IntakeFirstState = { yielding: false, share: settings.share };
  let nextLaunchAt = 0;
  let timer: NodeJS.Timeout | undefined;
  const listeners: ((yielding: boolean) => void)[] = [];

  function sample(): void {
    const was = state.yielding;
    state = nextState(state, { utilisation: measure(), arrivals }, settings);
    arrivals = 0;
    if (state.yielding === was) return;
    if (!state.yielding) nextLaunchAt = 0;
    for (const l of listeners) l(state.yielding);
  }

  return {
    arrived: () => void arrivals++,
    yielding: () => state.yielding,
    share: () => state.share,
    launchDelay: (now) => (state.yielding ? Math.max(0, nextLaunchAt - now) : 0),
    ran(ranMs, now) {
      if (state.yielding) nextLaunchAt = now + pauseAfter(ranMs, state.share);
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
      state = { yielding: false, share: settings.share };
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
