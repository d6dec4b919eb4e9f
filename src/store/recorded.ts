// What both backends keep of an incoming delivery and of a handler's outcome (the same on either backend).
import type { HandlerOutcomeRecord, Outcome } from "./records.js";

// Signatures prove a request to the intake; stored they would only help someone forge one.
const droppedHeaders = /^x-hub-signature/i;

/** `headers` without a signature; the same object when it holds none (the intake's never does: it keeps only what it names). */
export function keptHeaders(headers: Record<string, string>): Record<string, string> {
  for (const name in headers) {
    if (droppedHeaders.test(name))
      return Object.fromEntries(Object.entries(headers).filter(([n]) => !droppedHeaders.test(n)));
  }
  return headers;
}

/** Which field of an outcome is kept as its detail; also what the detail is called where it is shown. */
export const DETAIL_FIELD = { done: "summary", skipped: "reason", failed: "error" } as const satisfies {
  [S in Outcome["status"]]: keyof Extract<Outcome, { status: S }>;
};

/** What is kept of an outcome: its status, its detail and whether a failure may be retried. */
export function outcomeRecord(o: Outcome): Pick<HandlerOutcomeRecord, "status" | "detail" | "retryable"> {
  const detail = (o as Partial<Record<(typeof DETAIL_FIELD)[Outcome["status"]], string>>)[DETAIL_FIELD[o.status]];
  return { status: o.status, detail, retryable: !(o.status === "failed" && o.retryable === false) };
}
