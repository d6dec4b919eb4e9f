// Load generator: autocannon as a library, cycling through signed payloads and giving
// every request a fresh X-GitHub-Delivery (GitHub's form: delivery-ids.ts) so each is a new
// delivery to record.
import autocannon from "autocannon";
import type { SignedPayload } from "./payloads.js";
import { deliveryId } from "./delivery-ids.js";

export interface LoadResult {
  connections: number;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  /** Requests not answered within the timeout (counted in `errors` too, as autocannon does). */
  timeouts: number;
}

/** `amount`: send exactly this many and stop (instead of for `seconds`); `timeoutSeconds`: a request unanswered this long counts as a timeout. */
export async function runLoad(opts: { url: string; payloads: SignedPayload[]; connections: number; seconds: number; amount?: number; timeoutSeconds?: number }): Promise<LoadResult> {
  let i = 0;
  const result = await autocannon({
    url: opts.url,
    connections: opts.connections,
    ...(opts.amount !== undefined ? { amount: opts.amount } : { duration: opts.seconds }),
    ...(opts.timeoutSeconds !== undefined ? { timeout: opts.timeoutSeconds } : {}),
    pipelining: 1,
    requests: [
      {
        method: "POST",
        setupRequest: (req) => {
          const p = opts.payloads[i++ % opts.payloads.length]!;
          return {
            ...req,
            body: p.body,
            headers: {
              "content-type": "application/json",
              "x-github-event": p.event,
              "x-github-delivery": deliveryId(),
              "x-hub-signature-256": p.signature,
              "user-agent": "GitHub-Hookshot/bench",
            },
          };
        },
      },
    ],
  });
  return {
    connections: opts.connections,
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    // autocannon counts a timeout in `errors` as well.
    errors: result.errors,
    timeouts: result.timeouts,
  };
}
