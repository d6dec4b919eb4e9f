// Operations endpoints: liveness, readiness and Prometheus metrics.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { DeliveryIntake } from "../intake/delivery-intake.js";
import type { Metrics } from "./metrics.js";
import { sendJson } from "../intake/respond.js";
import { safeErrorMessage } from "../log/redact.js";

export interface OpsOptions {
  intake: Pick<DeliveryIntake, "ready">;
  metrics: Pick<Metrics, "text" | "contentType">;
  logger: Logger;
  isDraining: () => boolean;
}

/** How long GET /readyz waits for the store's answer (orchestrators' probes time out at 1 s and up, and retry). */
export const READY_TIMEOUT_MS = 2_000;

export type OpsRoute = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Routes by exact path; each answers GET and HEAD. */
export function createOpsRoutes(opts: OpsOptions): Record<string, OpsRoute> {
  const log = opts.logger.child({ component: "ops" });
  return {
    "/healthz": async (_req, res) => sendJson(res, 200, { status: "alive" }),
    "/readyz": async (_req, res) => {
      if (opts.isDraining()) return sendJson(res, 503, { status: "shutting down" });
      let ready: boolean | "late" = false;
      let timer: NodeJS.Timeout | undefined;
      try {
        // A store that takes commands but never answers (a paused Redis, a lock held for long)
        // must not hold the probe's answer: not answering in time is not ready.
        const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), READY_TIMEOUT_MS)));
        ready = await Promise.race([opts.intake.ready(), late]);
      } catch (error) {
        log.warn({ error: safeErrorMessage(error) }, "readiness check failed");
      } finally {
        clearTimeout(timer);
      }
      if (ready === "late") return sendJson(res, 503, { status: "store did not answer in time" });
      sendJson(res, ready ? 200 : 503, { status: ready ? "ready" : "store or queue unavailable" });
    },
    "/metrics": async (_req, res) => {
      try {
        const text = await opts.metrics.text();
        res.writeHead(200, { "content-type": opts.metrics.contentType, "content-length": Buffer.byteLength(text) });
        res.end(text);
      } catch (error) {
        log.warn({ error: safeErrorMessage(error) }, "metrics collection failed");
        sendJson(res, 503, { message: "metrics unavailable" });
      }
    },
  };
}
