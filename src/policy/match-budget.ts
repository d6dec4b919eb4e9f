// Defence in depth behind the linear-time engines: the CPU time one delivery may spend matching
// policy patterns. Matching runs in bounded slices (see handlers/rerun/scan.ts), each charged here;
// a delivery over budget fails with a clear error, is retried like any failure and ends dead after
// its attempts, instead of holding the process (and every installation) hostage.

/** Default CPU time one delivery may spend matching patterns against text. */
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
