// The load: real webhook payloads from @octokit/webhooks-examples (1-30 KB), signed as GitHub signs
// them, each request a new delivery (a fresh X-GitHub-Delivery), sent by autocannon over keep-alive
// connections. Latencies are taken from every answer at full resolution (autocannon's own
// histogram keeps whole milliseconds, too coarse for a p99 near 1 ms).
import { createHmac, randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import autocannon from "autocannon";

export const SECRET = "bench-secret";

export interface SignedPayload {
  event: string;
  body: string;
  signature: string;
}

const EVENTS = new Set([
  "push",
  "pull_request",
  "workflow_run",
  "workflow_job",
  "check_run",
  "check_suite",
  "issues",
  "issue_comment",
  "deployment_protection_rule",
]);

export function signedPayloads(): SignedPayload[] {
  const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as {
    name: string;
    examples: unknown[];
  }[];
  return examples
    .filter((group) => EVENTS.has(group.name))
    .flatMap((group) => group.examples.map((example) => ({ event: group.name, body: JSON.stringify(example) })))
    .filter((p) => p.body.length >= 1024 && p.body.length <= 30 * 1024)
    .map((p) => ({ ...p, signature: `sha256=${createHmac("sha256", SECRET).update(p.body).digest("hex")}` }));
}

export interface LoadResult {
  connections: number;
  sent: number;
  /** Answered 2xx. */
  answered: number;
  /** Answered, but not 2xx. */
  refused: number;
  /** Not answered: connection errors and timeouts. */
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
}

/** Nearest-rank percentile `p` of `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN;
}

/** `seconds` of load, or exactly `amount` requests; a request unanswered after `timeoutSeconds` is an error. */
export function runLoad(o: {
  url: string;
  payloads: SignedPayload[];
  connections: number;
  seconds?: number;
  amount?: number;
  timeoutSeconds?: number;
}): Promise<LoadResult> {
  let next = 0;
  const latencies: number[] = [];
  let refused = 0;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: o.url,
        connections: o.connections,
        pipelining: 1,
        timeout: o.timeoutSeconds ?? 10,
        ...(o.amount === undefined ? { duration: o.seconds ?? 10 } : { amount: o.amount }),
        requests: [
          {
            method: "POST",
            setupRequest: (req) => {
              const p = o.payloads[next++ % o.payloads.length]!;
              const headers = {
                "content-type": "application/json",
                "x-github-event": p.event,
                "x-github-delivery": randomUUID(),
                "x-hub-signature-256": p.signature,
                "user-agent": "GitHub-Hookshot/bench",
              };
              return { ...req, body: p.body, headers };
            },
          },
        ],
      },
      (error, result) => {
        if (error) return reject(error);
        const seconds = (performance.now() - started) / 1000;
        const answered = latencies.length - refused;
        resolve({
          connections: o.connections,
          sent: result.requests.sent,
          answered,
          refused,
          errors: result.errors,
          seconds,
          rps: answered / seconds,
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
        });
      },
    );
    instance.on("response", (_client, status: number, _bytes, ms: number) => {
      latencies.push(ms);
      if (status < 200 || status > 299) refused++;
    });
  });
}
