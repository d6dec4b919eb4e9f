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

type OutcomeFacts = Pick<HandlerOutcomeRecord, "handler" | "status" | "detail" | "retryable">;

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
  if (retryable.length > 0 && attempt < policy.maxAttempts) {
    return { status: "failed", retryAt: new Date(now.getTime() + backoffMs(attempt, policy)), lastError };
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
): TaskDecision {
  if (error === undefined) return { status: "done" };
  if (retryable && attempt < policy.maxAttempts) {
    return { status: "retry", retryAt: new Date(now.getTime() + backoffMs(attempt, policy)), lastError: error };
  }
  return { status: "dead", lastError: error };
}
