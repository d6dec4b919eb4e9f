// The API rate-limit budget per installation, as the last response reported it: fed by the
// API client's observer, read by the console's overview. Bounded by the installations seen.
// Each process writes what it saw to the store every few seconds while it changes (as delivery
// timing does, ops/timing.ts), so the overview shows every replica's view: for each
// installation, the newest observation any process made.
import { randomBytes } from "node:crypto";
import type { Store } from "../store/types.js";

const PREFIX = "steward/budget/";
/** How often a process writes its rows, when they changed. */
export const BUDGET_FLUSH_MS = 5_000;
/** A window resets within the hour: the record of a process that stopped goes after two. */
const BUDGET_TTL_MS = 2 * 3_600_000;

export interface BudgetRow {
  installation: number | "app";
  remaining: number;
  /** The window's size and when it resets (epoch ms), when the response said. */
  limit?: number;
  resetAt?: number;
  /** When this was seen (epoch ms). */
  at: number;
}

export class ApiBudget {
  readonly #rows = new Map<string, BudgetRow>();
  #changed = false;
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
    this.#changed = true;
  }

  rows(): BudgetRow[] {
    return [...this.#rows.values()];
  }

  /** Whether anything was noted since the last call. */
  takeChanged(): boolean {
    const changed = this.#changed;
    this.#changed = false;
    return changed;
  }
}

export interface BudgetRecorder {
  /** Write this process's rows now, if they changed (also done every BUDGET_FLUSH_MS). */
  flush(): Promise<void>;
  /** Stop the periodic writes after a last flush. */
  close(): Promise<void>;
}

export function budgetRecorder(
  kv: Pick<Store, "set">,
  budget: ApiBudget,
  opts: { flushMs?: number; onError?(e: unknown): void } = {},
): BudgetRecorder {
  const writer = randomBytes(6).toString("hex");
  let writing: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    if (!budget.takeChanged()) return writing;
    const rows = budget.rows();
    writing = writing
      .then(() => kv.set(`${PREFIX}${writer}`, { rows }, { ttlMs: BUDGET_TTL_MS }))
      .catch((e: unknown) => opts.onError?.(e));
    return writing;
  };
  const timer = setInterval(() => void flush(), opts.flushMs ?? BUDGET_FLUSH_MS);
  timer.unref();
  return {
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

const isRow = (r: unknown): r is BudgetRow =>
  typeof r === "object" &&
  r !== null &&
  typeof (r as BudgetRow).remaining === "number" &&
  typeof (r as BudgetRow).at === "number" &&
  (typeof (r as BudgetRow).installation === "number" || (r as BudgetRow).installation === "app");

/** Every process's rows (and `own`, this process's, not yet written), the newest observation of each installation. */
export async function readBudget(kv: Pick<Store, "list">, own?: ApiBudget): Promise<BudgetRow[]> {
  const newest = new Map<string, BudgetRow>();
  const take = (r: BudgetRow) => {
    const seen = newest.get(String(r.installation));
    if (!seen || r.at > seen.at) newest.set(String(r.installation), r);
  };
  for (const { value } of await kv.list<{ rows?: unknown[] }>(PREFIX))
    for (const r of Array.isArray(value?.rows) ? value.rows : []) if (isRow(r)) take(r);
  for (const r of own?.rows() ?? []) take(r);
  return [...newest.values()];
}
