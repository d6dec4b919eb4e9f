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
//
// The channel is input from outside, even in development: it is read with a bounded parser
// (bounded-sse.ts), never more than one event at a time. An event whose data passes 64 KiB
// without an `x-hub-signature-256` header (the relay writes headers before the body), or that
// passes 8 MiB, is dropped as it arrives, without being kept; smaller events are judged whole.
// Forwarded events are paced (10 a second, bursts of 20), and the next event is not read while
// one is being forwarded, so a flooding channel waits in its own socket, not in Steward's memory.
import type { Logger } from "pino";
import { backoffWait, pause, type Backoff } from "../lifecycle/backoff.js";
import { BoundedSseParser, type SseDrop, type SseEvent } from "./bounded-sse.js";

export interface WebhookProxyOptions {
  /** The channel (WEBHOOK_PROXY_URL). */
  source: string;
  /** Steward's own webhook URL on the loopback address. */
  target: string;
  logger: Logger;
  /** Waits between reconnections (default 1 s doubling to 1 min; reset once connected). */
  backoff?: Backoff;
  /** Largest event data forwarded (default 8 MiB); a larger event is dropped as it arrives. */
  maxEventBytes?: number;
  /** Events forwarded per second on average (default 10), and in a burst (default 20). */
  eventsPerSecond?: number;
  burst?: number;
}

export interface WebhookProxy {
  /** Disconnects, and waits for the forward in progress. Idempotent. */
  close(): Promise<void>;
}

/** Largest event forwarded by default: room for GitHub's large pushes, and a bound on what one event costs to parse. */
export const DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024;
/** An event whose data reaches this size is judged by its head: it must name a signature there. */
export const SIGNATURE_HEAD_BYTES = 64 * 1024;
const DEFAULT_EVENTS_PER_SECOND = 10;
const DEFAULT_BURST = 20;
/** One line per drop reason at most this often, counting what it left out. */
const DROP_LOG_MS = 10_000;
/** Headers of the relayed request that describe its transport, not the delivery. */
const TRANSPORT_HEADERS = new Set([
  "host",
  "content-length",
  "connection",
  "transfer-encoding",
  "accept-encoding",
  "keep-alive",
  "te",
  "upgrade",
]);
/** GitHub's signature header in the relay's JSON, as the relay writes it (lowercase, the value a string). */
const SIGNED = /"x-hub-signature-256"\s*:\s*"sha256=[0-9a-fA-F]{64}"/;
/** The length GitHub declared, when the relay kept it. */
const DECLARED_LENGTH = /"content-length"\s*:\s*"(\d{1,15})"/;

/** Why an event whose data reached SIGNATURE_HEAD_BYTES is dropped now, from its head. */
export function screenHead(head: Buffer, maxEventBytes: number): string | undefined {
  const text = head.toString("latin1");
  if (!SIGNED.test(text)) return "it is unsigned (no x-hub-signature-256 header before its body)";
  const declared = DECLARED_LENGTH.exec(text);
  if (declared && Number(declared[1]) > maxEventBytes) return `its body is declared larger than ${maxEventBytes} bytes`;
  return undefined;
}

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
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    return { error: "its data is not a JSON object" };
  const fields = parsed as Record<string, unknown>;
  if (typeof fields["x-github-event"] !== "string") return { error: "it has no x-github-event header" };
  if (typeof fields.body !== "object" || fields.body === null) return { error: "it has no body object" };
  // Steward's intake refuses it anyway (401): not forwarded, it costs nothing more.
  if (typeof fields["x-hub-signature-256"] !== "string")
    return { error: "it is unsigned (no x-hub-signature-256 header)" };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (name === "body" || name === "query" || name === "timestamp" || TRANSPORT_HEADERS.has(name.toLowerCase()))
      continue;
    if (typeof value === "string") headers[name.toLowerCase()] = value;
  }
  const type = headers["content-type"] ?? "application/json";
  headers["content-type"] = type;
  // A form-encoded delivery arrives parsed as { payload: "<json>" }: encode it back the same way.
  const body = type.startsWith("application/x-www-form-urlencoded")
    ? new URLSearchParams(
        Object.entries(fields.body as Record<string, unknown>).map(([k, v]): [string, string] => [
          k,
          typeof v === "string" ? v : JSON.stringify(v),
        ]),
      ).toString()
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
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const perSecond = opts.eventsPerSecond ?? DEFAULT_EVENTS_PER_SECOND;
  const burst = opts.burst ?? DEFAULT_BURST;
  const stop = new AbortController();
  let tokens = burst;
  let refilledAt = Date.now();
  let lastEventId = "";
  /** Connections in a row that failed or ended; the wait before the next grows with it. */
  let failures = 0;
  const dropLog = new Map<string, { at: number; left: number }>();

  /** A log line for a dropped event, at most one per reason every DROP_LOG_MS (a channel can send thousands). */
  function dropped(reason: string, detail: Record<string, unknown> = {}): void {
    const now = Date.now();
    const seen = dropLog.get(reason);
    if (seen && now - seen.at < DROP_LOG_MS) {
      seen.left++;
      return;
    }
    if (!seen && dropLog.size >= 100) dropLog.clear();
    dropLog.set(reason, { at: now, left: 0 });
    log.warn(
      { ...detail, ...(seen?.left ? { droppedSinceLastLine: seen.left } : {}) },
      `relayed event skipped: ${reason}`,
    );
  }

  /** Waits for the pace (a token bucket): a channel sending faster waits in its socket. */
  async function paced(): Promise<void> {
    for (;;) {
      const now = Date.now();
      tokens = Math.min(burst, tokens + ((now - refilledAt) / 1000) * perSecond);
      refilledAt = now;
      if (tokens >= 1) {
        tokens -= 1;
        return;
      }
      await pause(Math.ceil(((1 - tokens) / perSecond) * 1000), stop.signal);
      if (stop.signal.aborted) return;
    }
  }

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

  async function onEvent(event: SseEvent | SseDrop): Promise<void> {
    if ("reason" in event) {
      dropped(event.reason);
      return;
    }
    lastEventId = event.lastEventId;
    const delivery = relayedDelivery(event.data.toString("utf8"));
    if ("error" in delivery) {
      dropped(delivery.error, { eventId: event.lastEventId || undefined });
      return;
    }
    await paced();
    if (stop.signal.aborted) return;
    // One at a time, in the channel's order: the next event is not read meanwhile.
    await forward(delivery);
  }

  /** One connection: resolves when the stream ends, throws when it cannot be read. */
  async function readChannel(): Promise<void> {
    const res = await fetch(opts.source, {
      headers: {
        accept: "text/event-stream",
        "cache-control": "no-cache",
        ...(lastEventId ? { "last-event-id": lastEventId } : {}),
      },
      signal: stop.signal,
    });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      throw Object.assign(new Error(`the channel answered ${res.status}`), { status: res.status });
    }
    if (!/^text\/event-stream\b/i.test(res.headers.get("content-type") ?? "")) {
      await res.body.cancel().catch(() => undefined);
      throw new Error("the channel is not an event stream");
    }
    failures = 0;
    log.info("connected to the webhook proxy channel");
    const parser = new BoundedSseParser({
      maxEventBytes,
      headBytes: SIGNATURE_HEAD_BYTES,
      screen: (head) => screenHead(head, maxEventBytes),
      wanted: (type) => type === "message",
    });
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        for (const event of parser.push(value)) {
          await onEvent(event);
          if (stop.signal.aborted) return;
        }
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  async function run(): Promise<void> {
    while (!stop.signal.aborted) {
      let status: number | undefined;
      try {
        await readChannel();
      } catch (error) {
        status = (error as { status?: number }).status;
      }
      if (stop.signal.aborted) return;
      failures++;
      const wait = backoffWait(backoff, failures);
      log.warn({ retryInMs: wait, ...(status ? { status } : {}) }, "webhook proxy channel disconnected; reconnecting");
      await pause(wait, stop.signal);
    }
  }

  const running = run();
  log.info("forwarding deliveries from WEBHOOK_PROXY_URL to the webhook path");
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        stop.abort();
        await running;
        log.info("webhook proxy stopped");
      })();
      return closing;
    },
  };
}
