// POST <webhook path>: verify, record durably, answer. No handler work happens here; the
// answer is sent only after `intake.record()` resolved, so an accepted delivery survives
// a crash, and a duplicate id is acknowledged without being queued twice.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { DeliveryIntake } from "./delivery-intake.js";
import { safeErrorMessage } from "../log/redact.js";
import { declaredTooLarge, readBody } from "./body.js";
import { BodyAdmission, type AdmittedBody } from "./admission.js";
import { eventLabel, metricEventLabel, parseDelivery, refuseByHeaders } from "./delivery.js";
import { prepareJson, sendJson, sendJsonAndClose, sendPrepared } from "./respond.js";
import { verifySignature } from "./signature.js";
import { context, trace, SpanStatusCode, type Span } from "@opentelemetry/api";
import { inSpan, startReceiptSpan, tracer } from "../log/trace.js";
import { reportError } from "../log/errors.js";

/** GitHub caps webhook payloads at 25 MB. */
export const MAX_BODY_BYTES = 25 * 1024 * 1024;

export interface ReceiverOptions {
  secrets: readonly string[];
  intake: DeliveryIntake;
  logger: Logger;
  metrics?: {
    deliveryReceived(event: string, status: number): void;
    /** Seconds from when GitHub says the event happened to its receipt (github-time.ts), per recorded delivery. */
    deliveryLag?(event: string, seconds: number): void;
  };
  /** True once shutdown began: new deliveries are refused with 503 so the sender retries elsewhere/later. */
  isDraining: () => boolean;
  maxBodyBytes?: number;
  /** Bytes and bodies held at once, in all and per peer, before deliveries are answered 503 (shared by the server). */
  admission?: BodyAdmission;
  /** A body must arrive whole within this (default DEFAULT_BODY_TIMEOUT_MS). */
  bodyTimeoutMs?: number;
  /** Bytes a second a body must arrive at after BODY_GRACE_MS (default DEFAULT_BODY_MIN_RATE; 0: no floor). */
  bodyMinRate?: number;
  now?: () => Date;
}

/** Well before the server's 60 s request timeout: GitHub sends a 25 MB body in far less. */
export const DEFAULT_BODY_TIMEOUT_MS = 15_000;
/**
 * A body must arrive at 16 KiB a second, counted from BODY_GRACE_MS after its headers: far below
 * what GitHub sends at, far above what holds a place for free (a 1 MiB delivery may take a minute).
 */
export const DEFAULT_BODY_MIN_RATE = 16 * 1024;
export const BODY_GRACE_MS = 2_000;
/** What a sender refused for lack of room is told to wait. */
const RETRY_AFTER_SECONDS = 5;

/** The answers every accepted delivery gets, encoded once rather than per request. */
const RECORDED = prepareJson(202, { message: "recorded" });
const ALREADY_RECORDED = prepareJson(200, { message: "already recorded" });

export type WebhookReceiver = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createWebhookReceiver(opts: ReceiverOptions): WebhookReceiver {
  const limit = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const admission = opts.admission ?? new BodyAdmission({ largestBody: limit });
  const minRate = { bytesPerSecond: opts.bodyMinRate ?? DEFAULT_BODY_MIN_RATE, graceMs: BODY_GRACE_MS };
  const bodyTimeoutMs = opts.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const now = opts.now ?? (() => new Date());
  const log = opts.logger.child({ component: "intake" });

  return async function receive(req, res) {
    const arrived = new Date();
    const event = eventLabel(req.headers);
    const deliveryId = req.headers["x-github-delivery"];
    let verified = false;
    // The delivery's trace begins once its signature verified: a request anyone can send makes
    // no span, and cannot put one in the trace of a delivery whose id it names.
    let receipt: Span | undefined;
    const answer = (status: number, message: string, close = false, headers: Record<string, string> = {}) => {
      receipt?.setAttribute("http.response.status_code", status);
      if (status >= 500) receipt?.setStatus({ code: SpanStatusCode.ERROR });
      opts.metrics?.deliveryReceived(metricEventLabel(req.headers, verified), status);
      if (close) sendJsonAndClose(req, res, status, message, headers);
      else sendJson(res, status, { message }, headers);
    };
    let admitted: AdmittedBody | undefined;
    const noRoom = () => {
      log.warn(
        { deliveryId, event },
        "delivery refused: request bodies in flight are at the intake's admission limits",
      );
      return answer(503, "too many request bodies in flight; deliver again later", true, {
        "retry-after": String(RETRY_AFTER_SECONDS),
      });
    };
    try {
      if (opts.isDraining()) return answer(503, "shutting down; deliver again later", true);
      const refusal = refuseByHeaders(req.headers);
      if (refusal) {
        log.warn({ deliveryId, event, status: refusal.status }, `delivery refused: ${refusal.message}`);
        return answer(refusal.status, refusal.message, true);
      }
      if (declaredTooLarge(req, limit)) {
        log.warn({ deliveryId, event }, "delivery refused: declared body over the size limit");
        return answer(413, `body larger than ${limit} bytes`, true);
      }
      // Charged as bytes arrive, never by the declared length: a body that declares 24 MiB and
      // sends nothing holds nothing, and is cut off by the rate floor.
      admitted = admission.admit(req.socket.remoteAddress);
      if (!admitted) return noRoom();
      const read = await readBody(req, limit, { timeoutMs: bodyTimeoutMs, minRate, admitted });
      if (read.ok) admitted.complete();
      else admitted.release();
      if (!read.ok) {
        if (read.reason === "aborted") {
          opts.metrics?.deliveryReceived(metricEventLabel(req.headers, false), 0);
          return;
        }
        if (read.reason === "timeout") {
          log.warn({ deliveryId, event }, "delivery refused: body did not arrive in time");
          return answer(408, `body did not arrive within ${bodyTimeoutMs} ms`, true);
        }
        if (read.reason === "too-slow") {
          log.warn({ deliveryId, event }, "delivery refused: body arrived too slowly");
          return answer(408, `body arrived slower than ${minRate.bytesPerSecond} bytes a second`, true);
        }
        if (read.reason === "no-room") return noRoom();
        log.warn({ deliveryId, event }, "delivery refused: body over the size limit");
        return answer(413, `body larger than ${limit} bytes`, true);
      }
      // Held until recorded (or refused): admission counts what is in memory.
      const verifying = new Date();
      if (!verifySignature(opts.secrets, read.body, req.headers["x-hub-signature-256"] as string)) {
        log.warn({ deliveryId, event }, "delivery refused: signature does not match");
        return answer(401, "signature does not match");
      }
      verified = true;
      receipt = startReceiptSpan(deliveryId as string, {
        startTime: arrived,
        attributes: {
          "github.delivery_id": deliveryId as string,
          "github.event": event,
          "http.request.body.size": read.body.length,
        },
      });
      const traced = trace.setSpan(context.active(), receipt);
      tracer.startSpan("webhook verify", { startTime: verifying }, traced).end();
      return await context.with(traced, () => recordVerified(read.body, receipt!));
    } catch (error) {
      // Never a 500 and never a crash: the sender retries, the redelivery sweeper recovers.
      log.error({ deliveryId, event, error: safeErrorMessage(error) }, "intake failed unexpectedly");
      reportError(error, { what: "intake failed", tags: { event } });
      if (!res.headersSent) answer(503, "temporarily unable to accept deliveries", true);
      else res.destroy();
    } finally {
      admitted?.release();
      receipt?.end();
    }

    /** Parses, records and answers a verified delivery (in its receipt span). */
    async function recordVerified(body: Buffer, span: Span): Promise<void> {
      const parsed = parseDelivery(req.headers, body, now());
      if (!parsed.ok) {
        log.warn({ deliveryId, event }, `delivery refused: ${parsed.refusal.message}`);
        return answer(parsed.refusal.status, parsed.refusal.message);
      }
      span.setAttribute("github.action", parsed.delivery.action ?? "");
      if (parsed.delivery.installationId !== undefined)
        span.setAttribute("github.installation", String(parsed.delivery.installationId));
      if (parsed.delivery.repository) span.setAttribute("github.repository", parsed.delivery.repository);
      let result: "recorded" | "duplicate";
      try {
        result = await inSpan("webhook record", {}, () => opts.intake.record(parsed.delivery));
        span.setAttribute("steward.recorded", result);
      } catch (error) {
        log.error({ deliveryId, event, error: safeErrorMessage(error) }, "delivery could not be recorded");
        return answer(503, "cannot record the delivery now; deliver again later");
      }
      const { delivery, githubAt } = parsed;
      const prepared = result === "duplicate" ? ALREADY_RECORDED : RECORDED;
      const label = metricEventLabel(req.headers, true);
      opts.metrics?.deliveryReceived(label, prepared.status);
      span.setAttribute("http.response.status_code", prepared.status);
      sendPrepared(res, prepared);
      // A redelivery of one already recorded says nothing new about GitHub's lag. GitHub's times
      // have whole seconds, so a clock a little ahead of ours shows as no lag rather than less.
      if (githubAt && result === "recorded") {
        opts.metrics?.deliveryLag?.(label, Math.max(0, (delivery.receivedAt.getTime() - githubAt.getTime()) / 1000));
      }
      // The log line's fields are only gathered when info is on: at warn this path allocates nothing for it.
      if (!log.isLevelEnabled("info")) return;
      if (result === "duplicate") log.info({ deliveryId, event }, "delivery already recorded");
      else {
        log.info(
          {
            deliveryId,
            event,
            action: delivery.action,
            installationId: delivery.installationId,
            repository: delivery.repository,
          },
          "delivery recorded",
        );
      }
    }
  };
}
