// GitHub's own answer "not now": an API call refused by the primary rate limit (remaining 0,
// with the reset time) or by a secondary limit (`retry-after`, or a 429 without one). Work that
// fails on it did nothing wrong; it waits for the time GitHub gave instead of backing off into
// the same wall and running out of attempts. One reading for every caller, so the engine's
// retry, a sync's pause and the words "delayed until" agree. Steward's own hold on a nearly
// spent budget (budget-reserve.ts) reads the same way.

/** GitHub's advice for a secondary limit without `retry-after`: wait at least a minute. */
const SECONDARY_DEFAULT_MS = 60_000;
/** The reset is whole seconds and clocks drift: one more second avoids asking a moment early. */
const RESET_MARGIN_MS = 1_000;

type Headers = Record<string, string | number | undefined>;

/** Steward's own "not now": the installation's budget is nearly spent and kept for acting (budget-reserve.ts). */
export class BudgetReserved extends Error {
  constructor(
    readonly until: Date,
    message: string,
  ) {
    super(message);
    this.name = "BudgetReserved";
  }
}

/**
 * When a window that GitHub says resets at `resetSeconds` (its clock, epoch seconds) resets on this
 * machine's clock, measured from the answer's `date` header when it has one.
 */
export function resetOnThisClock(resetSeconds: number, date: string | undefined, now: number): number {
  const serverNow = date === undefined ? NaN : Date.parse(date);
  return now + resetSeconds * 1000 - (Number.isFinite(serverNow) ? serverNow : now) + RESET_MARGIN_MS;
}

function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown } | null)?.status;
  return typeof s === "number" ? s : undefined;
}

function headersOf(error: unknown): Headers {
  return ((error as { response?: { headers?: Headers } } | null)?.response?.headers ?? {}) as Headers;
}

/**
 * How long to wait before asking again, or undefined when `error` is not a rate-limit refusal.
 * `retry-after` when given; else the primary limit's reset measured against the server's `date`
 * (this machine's clock may differ from GitHub's); a 429 without either waits a minute.
 */
export function rateLimitWaitMs(error: unknown, now = Date.now()): number | undefined {
  if (error instanceof BudgetReserved) return Math.max(0, error.until.getTime() - now);
  const status = statusOf(error);
  if (status !== 403 && status !== 429) return undefined;
  const h = headersOf(error);
  const retryAfter = Number(h["retry-after"]);
  if (h["retry-after"] !== undefined && Number.isFinite(retryAfter)) return Math.max(0, retryAfter * 1000);
  if (String(h["x-ratelimit-remaining"]) !== "0") return status === 429 ? SECONDARY_DEFAULT_MS : undefined;
  const reset = Number(h["x-ratelimit-reset"]);
  if (!Number.isFinite(reset) || reset <= 0) return SECONDARY_DEFAULT_MS;
  return Math.max(
    RESET_MARGIN_MS,
    resetOnThisClock(reset, h.date === undefined ? undefined : String(h.date), now) - now,
  );
}

/** When the call may be made again on this machine's clock, if `error` is a rate-limit refusal. */
export function rateLimitedUntil(error: unknown, now: Date = new Date()): Date | undefined {
  const wait = rateLimitWaitMs(error, now.getTime());
  return wait === undefined ? undefined : new Date(now.getTime() + wait);
}

/** What was delayed and why, in the words check runs, the console and logs use. */
export function delayedText(error: unknown, until: Date, now: Date = new Date()): string {
  const kept = error instanceof BudgetReserved;
  return `delayed by GitHub's rate limit until ${clockTime(until, now)}${kept ? ": the rest of this installation's budget is kept for re-runs and deployment answers" : ""}`;
}

/** "12:34 UTC" (with the date when it is not today's). */
export function clockTime(at: Date, now: Date = new Date()): string {
  const iso = at.toISOString();
  const time = `${iso.slice(11, 16)} UTC`;
  return iso.slice(0, 10) === now.toISOString().slice(0, 10) ? time : `${iso.slice(0, 10)} ${time}`;
}
