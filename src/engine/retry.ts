// Pure retry decisions: what happens to a delivery or a task after a run.
import type { DeliveryDecision, HandlerOutcomeRecord, TaskDecision } from "../store/records.js";

export interface RetryPolicy {
  maxAttempts: number;
  /** Delay before the second attempt; doubles each time. */
  baseMs: number;
  maxMs: number;
}

export const defaultRetry: Omit<RetryPolicy, "maxAttempts"> = { baseMs: 1_000, maxMs: 5 * 60_000 };

/** Delay after failed attempt number `attempt` (1-based): base, 2×base, 4×base… capped. */
export function backoffMs(attempt: number, policy: Pick<RetryPolicy, "baseMs" | "maxMs">): number {
  const exponent = Math.max(0, attempt - 1);
  // 2^31 already overflows any sane cap; avoid Infinity arithmetic.
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(exponent, 31));
}

type OutcomeFacts = Pick<HandlerOutcomeRecord, "handler" | "status" | "detail" | "retryable"> & {
  /** GitHub asked to wait until then (a rate limit). */
  notBefore?: Date | undefined;
};

/**
 * When a retry may come: after the backoff, and no sooner than GitHub asked. A failure that is only
 * GitHub's rate limit is retried whatever the attempts so far: the work waits for the reset, it is
 * never dropped for it.
 */
function nextTry(
  failures: readonly { notBefore?: Date | undefined }[],
  attempt: number,
  policy: RetryPolicy,
  now: Date,
): { at: Date; limitedOnly: boolean } {
  const waits = failures.map((f) => f.notBefore?.getTime() ?? 0);
  const at = Math.max(now.getTime() + backoffMs(attempt, policy), ...waits);
  return { at: new Date(at), limitedOnly: failures.length > 0 && waits.every((w) => w > 0) };
}

function failureLine(o: OutcomeFacts): string {
  return `${o.handler}: ${o.detail ?? "failed"}`;
}

/**
 * After a run: done when no routed handler failed; otherwise retry while a retryable failure has
 * attempts left, else dead. `attempt` is the delivery's run just finished (1-based).
 */
export function decideDelivery(
  outcomes: OutcomeFacts[],
  attempt: number,
  policy: RetryPolicy,
  now: Date,
): DeliveryDecision {
  const failures = outcomes.filter((o) => o.status === "failed");
  if (failures.length === 0) return { status: "done" };
  const lastError = failures.map(failureLine).join("; ");
  const retryable = failures.filter((o) => o.retryable);
  const next = nextTry(retryable, attempt, policy, now);
  if (retryable.length > 0 && (attempt < policy.maxAttempts || next.limitedOnly)) {
    return { status: "failed", retryAt: next.at, lastError };
  }
  return { status: "dead", lastError };
}

/** After a task run that threw or returned `failed`: retry with backoff until attempts run out. */
export function decideTask(
  error: string | undefined,
  retryable: boolean,
  attempt: number,
  policy: RetryPolicy,
  now: Date,
  notBefore?: Date,
): TaskDecision {
  if (error === undefined) return { status: "done" };
  const next = nextTry([{ notBefore }], attempt, policy, now);
  if (retryable && (attempt < policy.maxAttempts || next.limitedOnly)) {
    return { status: "retry", retryAt: next.at, lastError: error };
  }
  return { status: "dead", lastError: error };
}
