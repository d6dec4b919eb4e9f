// WEBHOOK_PROXY_URL (Probot's smee.io convention): Steward reads a Server-Sent Events channel
// to which a public relay posts GitHub's deliveries, and forwards each one over HTTP to its
// own webhook path on the loopback address. A forwarded delivery is a real delivery: the same
// signature check, durable recording and deduplication. The channel's URL is its only key
// (anyone holding it can read the payloads), so it is a secret: only its origin is logged.
//
// The relay's format (smee.io): each `message` event's data is one JSON object holding the
// delivery's headers as lowercase keys, `body` (the payload, parsed) and possibly `query` and
// `timestamp`. The relay parsed the body, so the bytes GitHub signed are gone: Steward sends
// `JSON.stringify(body)`, which is GitHub's compact serialisation for ordinary payloads, and
// the signature is verified as for any delivery. A payload GitHub serialised differently
// (escaped characters, number forms) fails verification with 401 and is logged saying why.
import { EventSource } from "eventsource";
import type { Logger } from "pino";
import { backoffWait, type Backoff } from "../lifecycle/backoff.js";

export interface WebhookProxyOptions {
  /** The channel (WEBHOOK_PROXY_URL). */
  source: string;
  /** Steward's own webhook URL on the loopback address. */
  target: string;
  logger: Logger;
  /** Waits between reconnections (default 1 s doubling to 1 min; reset once connected). */
  backoff?: Backoff;
}

export interface WebhookProxy {
  /** Disconnects, and waits for the forward in progress. Idempotent. */
  close(): Promise<void>;
}

/** Deliveries waiting to be forwarded; past this the channel is read faster than Steward records, and newer ones are dropped with an error. */
const MAX_PENDING = 1_000;
/** Headers of the relayed request that describe its transport, not the delivery. */
const TRANSPORT_HEADERS = new Set(["host", "content-length", "connection", "transfer-encoding", "accept-encoding", "keep-alive", "te", "upgrade"]);

export interface RelayedDelivery {
  headers: Record<string, string>;
  body: string;
}

/** Pure: the request to forward for one event's data, or why it cannot be forwarded. */
export function relayedDelivery(data: string): RelayedDelivery | { error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return { error: "its data is not JSON" };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { error: "its data is not a JSON object" };
  const fields = parsed as Record<string, unknown>;
  if (typeof fields["x-github-event"] !== "string") return { error: "it has no x-github-event header" };
  if (typeof fields.body !== "object" || fields.body === null) return { error: "it has no body object" };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (name === "body" || name === "query" || name === "timestamp" || TRANSPORT_HEADERS.has(name.toLowerCase())) continue;
    if (typeof value === "string") headers[name.toLowerCase()] = value;
  }
  const type = headers["content-type"] ?? "application/json";
  headers["content-type"] = type;
  // A form-encoded delivery arrives parsed as { payload: "<json>" }: encode it back the same way.
  const body = type.startsWith("application/x-www-form-urlencoded")
    ? new URLSearchParams(Object.entries(fields.body as Record<string, unknown>).map(([k, v]): [string, string] => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString()
    : JSON.stringify(fields.body);
  return { headers, body };
}

/** The origin of a URL, the only part of a channel that may be logged. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(not a URL)";
  }
}

export function startWebhookProxy(opts: WebhookProxyOptions): WebhookProxy {
  const log = opts.logger.child({ component: "webhook-proxy", channel: originOf(opts.source) });
  const backoff = opts.backoff ?? { minMs: 1_000, maxMs: 60_000 };
  let source: EventSource | undefined;
  let reconnect: NodeJS.Timeout | undefined;
  let failures = 0;
  let closed = false;
  let pending = 0;
  let chain: Promise<void> = Promise.resolve();

  async function forward(delivery: RelayedDelivery): Promise<void> {
    const who = { event: delivery.headers["x-github-event"], deliveryId: delivery.headers["x-github-delivery"] };
    try {
      const res = await fetch(opts.target, { method: "POST", headers: delivery.headers, body: delivery.body });
      await res.arrayBuffer().catch(() => undefined);
      if (res.ok) log.debug({ ...who, status: res.status }, "relayed delivery forwarded");
      else if (res.status === 401) {
        log.warn(
          { ...who, status: res.status },
          "relayed delivery refused: its signature does not match the re-serialised body (the relay parsed the JSON GitHub signed; check WEBHOOK_SECRET, or the payload holds characters GitHub serialises differently)",
        );
      } else log.warn({ ...who, status: res.status }, "relayed delivery not recorded");
    } catch (error) {
      log.warn({ ...who, error: (error as Error).message }, "relayed delivery could not be forwarded to Steward");
    }
  }

  function onMessage(event: MessageEvent): void {
    const delivery = relayedDelivery(String(event.data));
    if ("error" in delivery) {
      log.warn({ eventId: event.lastEventId || undefined }, `relayed event skipped: ${delivery.error}`);
      return;
    }
    if (pending >= MAX_PENDING) {
      log.error({ event: delivery.headers["x-github-event"], deliveryId: delivery.headers["x-github-delivery"] }, "relayed delivery dropped: too many waiting to be forwarded");
      return;
    }
    pending++;
    // One at a time, in the channel's order.
    chain = chain.then(() => forward(delivery)).finally(() => pending--);
  }

  function connect(): void {
    if (closed) return;
    const es = new EventSource(opts.source);
    source = es;
    es.addEventListener("open", () => {
      failures = 0;
      log.info("connected to the webhook proxy channel");
    });
    es.addEventListener("message", onMessage);
    // The library's own reconnection has a fixed delay and gives up on an HTTP error: Steward
    // closes the source on any error and reconnects itself, with backoff.
    es.addEventListener("error", (event) => {
      if (closed || source !== es) return;
      es.close();
      failures++;
      const wait = backoffWait(backoff, failures);
      const status = (event as { code?: number }).code;
      log.warn({ retryInMs: wait, ...(status ? { status } : {}) }, "webhook proxy channel disconnected; reconnecting");
      reconnect = setTimeout(connect, wait);
    });
  }

  connect();
  log.info("forwarding deliveries from WEBHOOK_PROXY_URL to the webhook path");
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        closed = true;
        clearTimeout(reconnect);
        source?.close();
        await chain;
        log.info("webhook proxy stopped");
      })();
      return closing;
    },
  };
}
