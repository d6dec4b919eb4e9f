// The API rate-limit budget per installation, as the last response reported it: fed by the
// API client's observer, read by the console's overview. Bounded by the installations seen.
export interface BudgetRow {
  installation: number | "app";
  remaining: number;
  /** The window's size and when it resets (epoch ms), when the response said. */
  limit?: number;
  resetAt?: number;
  at: number;
}

export class ApiBudget {
  readonly #rows = new Map<string, BudgetRow>();
  static readonly MAX = 10_000;

  note(
    installation: number | "app",
    remaining: number | undefined,
    window: { limit?: number; resetAt?: number } = {},
  ): void {
    if (remaining === undefined || !Number.isFinite(remaining)) return;
    const key = String(installation);
    if (!this.#rows.has(key) && this.#rows.size >= ApiBudget.MAX) return;
    this.#rows.set(key, { installation, remaining, ...window, at: Date.now() });
  }

  rows(): BudgetRow[] {
    return [...this.#rows.values()];
  }
}
