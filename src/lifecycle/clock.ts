// The clock Steward decides and schedules by. In production it is the host's; in the sandbox it is
// the hub's (src/sandbox/stack.ts), which a person or a test can move: handlers read the time
// through `ctx.now()`, and the engine brings scheduled tasks forward (or back) by as much as the
// clock moved, so what was due "in two hours" runs when the clock is moved two hours on.

export interface Clock {
  now(): Date;
  /**
   * For clocks that can jump: `listener` is called with how far (ms; negative: back) after each
   * jump. Returns the unsubscribe function.
   */
  onMove?(listener: (deltaMs: number) => void): () => void;
}

export const systemClock: Clock = { now: () => new Date() };
