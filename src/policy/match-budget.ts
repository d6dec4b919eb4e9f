// The time one delivery may spend matching policy patterns against text. Each matching job runs in
// a worker thread terminated at the time the delivery has left (bounded-match.ts), so the budget is
// enforced within a call, not only between calls; what was stopped is reported, and a decision
// that needed it fails closed.

/** Default time one delivery may spend matching patterns against text. */
export const DEFAULT_MATCH_BUDGET_MS = 5_000;

export class MatchBudgetExceeded extends Error {
  constructor(limitMs: number, what: string) {
    super(`pattern matching exceeded its budget of ${limitMs} ms of CPU time per delivery (${what})`);
    this.name = "MatchBudgetExceeded";
  }
}

export class MatchBudget {
  private spentMs = 0;
  constructor(readonly limitMs: number = DEFAULT_MATCH_BUDGET_MS) {}

  get spent(): number {
    return this.spentMs;
  }

  /** Time left, in ms (0 once spent). */
  get remaining(): number {
    return Math.max(0, this.limitMs - this.spentMs);
  }

  /** Counts `ms` of matching done elsewhere (a worker) against the budget. */
  spend(ms: number): void {
    this.spentMs += ms;
  }

  /** Runs one bounded slice of matching and charges its time; throws once the budget is spent. */
  charge<T>(what: string, slice: () => T): T {
    if (this.spentMs > this.limitMs) throw new MatchBudgetExceeded(this.limitMs, what);
    const start = performance.now();
    try {
      return slice();
    } finally {
      this.spentMs += performance.now() - start;
    }
  }
}
