// Pure decisions of the webhook intake: which requests are acceptable and how a raw
// delivery becomes an IncomingDelivery. No I/O here; the receiver carries out the result.
import type { IncomingHttpHeaders } from "node:http";
import { emitterEventNames } from "@octokit/webhooks";
import type { IncomingDelivery } from "../store/records.js";
import { githubTimeOf } from "./github-time.js";

export type Refusal = { status: 400 | 401 | 413 | 415; message: string };

export type Encoding = "json" | "form";

/** Headers kept with a delivery: enough to trace and replay it, never a credential. */
const KEPT_HEADERS = [
  "x-github-event",
  "x-github-delivery",
  "x-github-hook-id",
  "x-github-hook-installation-target-id",
  "x-github-hook-installation-target-type",
  "user-agent",
  "content-type",
] as const;

const EVENT_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The body encoding named by Content-Type, or undefined when it is not one a webhook uses. */
export function encodingOf(contentType: string | undefined): Encoding | undefined {
  const media = contentType?.split(";")[0]?.trim().toLowerCase();
  if (media === "application/json") return "json";
  if (media === "application/x-www-form-urlencoded") return "form";
  return undefined;
}

/** Checks that need only the headers, in the order a sender can fix them. */
export function refuseByHeaders(headers: IncomingHttpHeaders): Refusal | undefined {
  const event = single(headers["x-github-event"]);
  const id = single(headers["x-github-delivery"]);
  if (!event) return { status: 400, message: "missing X-GitHub-Event header" };
  if (!EVENT_NAME.test(event)) return { status: 400, message: "X-GitHub-Event is not an event name" };
  if (!id) return { status: 400, message: "missing X-GitHub-Delivery header" };
  if (!DELIVERY_ID.test(id)) return { status: 400, message: "X-GitHub-Delivery is not a delivery id" };
  if (!single(headers["x-hub-signature-256"])) return { status: 401, message: "missing X-Hub-Signature-256 header" };
  if (!encodingOf(single(headers["content-type"]))) {
    return { status: 415, message: "Content-Type must be application/json or application/x-www-form-urlencoded" };
  }
  return undefined;
}

/** Event name used as a metrics label: bounded to names that look like events. */
export function eventLabel(headers: IncomingHttpHeaders): string {
  const event = single(headers["x-github-event"]);
  return event && EVENT_NAME.test(event) ? event : "unknown";
}

/** Webhook event names GitHub sends (from @octokit/webhooks); `ping` included. */
const KNOWN_EVENTS: ReadonlySet<string> = new Set(emitterEventNames.filter((name) => !name.includes(".")));

/**
 * The event as a metric label. Labels create state, so an unauthenticated request must not pick
 * one: before the signature verifies the label is `unverified`; after, a known event name, or
 * `other` for a name GitHub may add later. At most |known events| + 3 values, whatever is sent.
 */
export function metricEventLabel(headers: IncomingHttpHeaders, verified: boolean): string {
  if (!verified) return "unverified";
  const event = single(headers["x-github-event"]);
  return event && KNOWN_EVENTS.has(event) ? event : "other";
}

function payloadText(body: Buffer, encoding: Encoding): string | undefined {
  const text = body.toString("utf8");
  if (encoding === "json") return text;
  // Form-encoded deliveries carry the JSON in the `payload` field.
  return new URLSearchParams(text).get("payload") ?? undefined;
}

function objectOr(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The fields a delivery is routed and listed by, from one parse of its payload; or why it is not a JSON object. */
function routingFields(
  text: string,
  event: string,
):
  | { ok: true; action?: string; installationId?: number; repository?: string; githubAt?: Date }
  | { ok: false; refusal: Refusal } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, refusal: { status: 400, message: "payload is not valid JSON" } };
  }
  const payload = objectOr(value);
  if (!payload) return { ok: false, refusal: { status: 400, message: "payload must be a JSON object" } };
  const { action } = payload;
  const id = objectOr(payload.installation)?.id;
  const fullName = objectOr(payload.repository)?.full_name;
  const named = typeof action === "string" ? action : undefined;
  return {
    ok: true,
    action: named,
    githubAt: githubTimeOf(event, named, payload),
    installationId: typeof id === "number" && Number.isSafeInteger(id) ? id : undefined,
    repository: typeof fullName === "string" ? fullName : undefined,
  };
}

/**
 * Turn a verified body into a delivery, or say why it is not one. `githubAt`: when GitHub says
 * the event happened (github-time.ts), when the payload says.
 */
export function parseDelivery(
  headers: IncomingHttpHeaders,
  body: Buffer,
  receivedAt: Date,
): { ok: true; delivery: IncomingDelivery; githubAt?: Date } | { ok: false; refusal: Refusal } {
  const encoding = encodingOf(single(headers["content-type"]));
  if (!encoding)
    return { ok: false, refusal: refuseByHeaders(headers) ?? { status: 415, message: "unsupported Content-Type" } };
  const text = payloadText(body, encoding);
  if (text === undefined) return { ok: false, refusal: { status: 400, message: "form body has no payload field" } };
  const event = single(headers["x-github-event"]) as string;
  const routing = routingFields(text, event);
  if (!routing.ok) return { ok: false, refusal: routing.refusal };
  const { action, installationId, repository, githubAt } = routing;
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = single(headers[name]);
    if (value !== undefined) kept[name] = value;
  }
  return {
    ok: true,
    delivery: {
      id: single(headers["x-github-delivery"]) as string,
      event,
      action,
      installationId,
      repository,
      headers: kept,
      // Form deliveries are stored unwrapped: `text` is the JSON either way.
      payload: text,
      receivedAt,
    },
    ...(githubAt ? { githubAt } : {}),
  };
}
