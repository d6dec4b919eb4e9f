// What both backends keep of an incoming delivery and of a handler's outcome, and the claim a
// delivery recorded already leased stands for (the same on either backend).
import type { Outcome } from "../handler.js";
import type { IncomingDelivery } from "../queue/types.js";
import type { ClaimedDelivery } from "../queue/engine-types.js";

// Signatures prove a request to the intake; stored they would only help someone forge one.
const droppedHeaders = /^x-hub-signature/i;

export function keptHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !droppedHeaders.test(name)));
}

/** The claim of a delivery inserted as running under `token` at `now` (its first attempt). */
export function leasedAsRecorded(d: IncomingDelivery, headers: Record<string, string>, token: string, now: number): ClaimedDelivery {
  const { parsed, ...incoming } = d;
  const at = new Date(now);
  return {
    token,
    delivery: { ...incoming, headers, status: "running", attempts: 1, nextRunAt: at, lastError: undefined, updatedAt: at },
    outcomes: [],
    parsed,
  };
}

/** The text kept beside an outcome: summary (done), reason (skipped) or error (failed). */
export function outcomeDetail(o: Outcome): string | undefined {
  switch (o.status) {
    case "done":
      return o.summary;
    case "skipped":
      return o.reason;
    case "failed":
      return o.error;
  }
}
