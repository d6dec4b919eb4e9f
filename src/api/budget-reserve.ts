// As an installation's hourly budget runs low, what acts keeps the rest: re-runs, deployment
// answers and the reads that decide them go on, while reports (check runs, statuses, comments),
// syncs (secrets and variables) and other writes wait for the reset. A held request fails with
// `BudgetReserved`, which the engine and the secrets sync read as GitHub's own "not now"
// (rate-limit.ts): the work is scheduled for the reset, never dropped and never retried in a
// loop. Every answer updates what is known, so a new window lifts the hold with the first read.
// Acting requests are never held here: once the budget is spent, GitHub's refusal says until when.

import { BudgetReserved, resetOnThisClock } from "./rate-limit.js";

/** The share of the hourly limit kept for acting once the remaining budget falls below it. */
export const RESERVE_SHARE = 0.1;

/** An installation's core rate-limit window as an answer gave it. */
export interface RateWindow {
  remaining: number;
  limit: number | undefined;
  /** When the window resets, on this machine's clock (epoch ms). */
  resetAt: number;
}

/** One installation's budget as its last answer gave it. */
export class BudgetReserve {
  private window: RateWindow | undefined;

  constructor(private readonly share = RESERVE_SHARE) {}

  /**
   * Learn from an answer's headers (refusals included) and return the window they give, if any.
   * Search and GraphQL have budgets of their own and leave the core window as it was.
   */
  observe(headers: Headers, now = Date.now()): RateWindow | undefined {
    const resource = headers.get("x-ratelimit-resource");
    if (resource !== null && resource !== "core") return undefined;
    const remaining = Number(headers.get("x-ratelimit-remaining") ?? NaN);
    const reset = Number(headers.get("x-ratelimit-reset") ?? NaN);
    if (!Number.isFinite(remaining) || !Number.isFinite(reset)) return undefined;
    const limit = Number(headers.get("x-ratelimit-limit") ?? NaN);
    this.window = {
      remaining,
      limit: Number.isFinite(limit) && limit > 0 ? limit : undefined,
      resetAt: resetOnThisClock(reset, headers.get("date") ?? undefined, now),
    };
    return this.window;
  }

  /** Why a request must wait, or undefined when it may go now. */
  hold(acting: boolean, now = Date.now()): BudgetReserved | undefined {
    const w = this.window;
    if (acting || !w || w.limit === undefined || w.resetAt <= now) return undefined;
    const kept = Math.ceil(w.limit * this.share);
    if (w.remaining >= kept) return undefined;
    return new BudgetReserved(
      new Date(w.resetAt),
      `this installation's API rate limit is nearly spent (${w.remaining} of ${w.limit} left); the last ${kept} are kept for re-runs and deployment answers`,
    );
  }
}

/** Writes that answer something waiting on GitHub's side: a failed run to re-run, a deployment waiting for its review or protection rule. */
// Matched on the route as the hook sees it: a template (`.../runs/{run_id}/rerun`) or a full URL.
const ANSWERS =
  /\/actions\/(?:runs\/[^/]+\/(?:rerun|rerun-failed-jobs|deployment_protection_rule|pending_deployments)|jobs\/[^/]+\/rerun)$/;

/** Secrets and variables, of an organisation, a repository or an environment: the sync's reads and writes. */
const SYNC = /\/(?:actions|environments\/[^/]+|dependabot|codespaces)\/(?:secrets|variables)(?:\/|$)/;

/** Whether a request answers something waiting (it goes ahead of queued reports and syncs). */
export function isAnswer(pathname: string): boolean {
  return ANSWERS.test(pathname);
}

/**
 * Whether a request is part of acting: an answer, or a read other than a sync's (reads decide
 * re-runs and deployment answers). Reports, syncs and every other write are not.
 */
export function isActing(method: string, pathname: string): boolean {
  if (SYNC.test(pathname)) return false;
  const m = method.toUpperCase();
  return m === "GET" || m === "HEAD" || ANSWERS.test(pathname);
}
