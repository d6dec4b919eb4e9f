// POST <webhook path>: verify, record durably, answer. No handler work happens here; the
// answer is sent only after `intake.record()` resolved, so an accepted delivery survives
// a crash, and a duplicate id is acknowledged without being queued twice.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { DeliveryIntake } from "../queue/types.js";
import { safeErrorMessage } from "../log/redact.js";
import { declaredTooLarge, readBody } from "./body.js";
import { eventLabel, metricEventLabel, parseDelivery, refuseByHeaders } from "./delivery.js";
import { sendJson, sendJsonAndClose } from "./respond.js";
import { verifySignature } from "./signature.js";

/** GitHub caps webhook payloads at 25 MB. */
export const MAX_BODY_BYTES = 25 * 1024 * 1024;

export interface ReceiverOptions {
  secrets: readonly string[];
  intake: DeliveryIntake;
  logger: Logger;
  metrics?: { deliveryReceived(event: string, status: number): void };
  /** True once shutdown began: new deliveries are refused with 503 so the sender retries elsewhere/later. */
  isDraining: () => boolean;
  maxBodyBytes?: number;
  now?: () => Date;
}

export type WebhookReceiver = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createWebhookReceiver(opts: ReceiverOptions): WebhookReceiver {
  const limit = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const now = opts.now ?? (() => new Date());
  const log = opts.logger.child({ component: "intake" });

  return async function receive(req, res) {
    const event = eventLabel(req.headers);
    const deliveryId = req.headers["x-github-delivery"];
    let verified = false;
    const answer = (status: number, message: string, close = false) => {
      opts.metrics?.deliveryReceived(metricEventLabel(req.headers, verified), status);
      if (close) sendJsonAndClose(req, res, status, message);
      else sendJson(res, status, { message });
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
      const read = await readBody(req, limit);
      if (!read.ok) {
        if (read.reason === "aborted") {
          opts.metrics?.deliveryReceived(metricEventLabel(req.headers, false), 0);
          return;
        }
        log.warn({ deliveryId, event }, "delivery refused: body over the size limit");
        return answer(413, `body larger than ${limit} bytes`, true);
      }
      if (!verifySignature(opts.secrets, read.body, req.headers["x-hub-signature-256"] as string)) {
        log.warn({ deliveryId, event }, "delivery refused: signature does not match");
        return answer(401, "signature does not match");
      }
      verified = true;
      const parsed = parseDelivery(req.headers, read.body, now());
      if (!parsed.ok) {
        log.warn({ deliveryId, event }, `delivery refused: ${parsed.refusal.message}`);
        return answer(parsed.refusal.status, parsed.refusal.message);
      }
      let result: "recorded" | "duplicate";
      try {
        result = await opts.intake.record(parsed.delivery);
      } catch (error) {
        log.error({ deliveryId, event, error: safeErrorMessage(error) }, "delivery could not be recorded");
        return answer(503, "cannot record the delivery now; deliver again later");
      }
      const { delivery } = parsed;
      if (result === "duplicate") {
        log.info({ deliveryId, event }, "delivery already recorded");
        return answer(200, "already recorded");
      }
      log.info(
        { deliveryId, event, action: delivery.action, installationId: delivery.installationId, repository: delivery.repository },
        "delivery recorded",
      );
      return answer(202, "recorded");
    } catch (error) {
      // Never a 500 and never a crash: the sender retries, the redelivery sweeper recovers.
      log.error({ deliveryId, event, error: safeErrorMessage(error) }, "intake failed unexpectedly");
      if (!res.headersSent) answer(503, "temporarily unable to accept deliveries", true);
      else res.destroy();
    }
  };
}
