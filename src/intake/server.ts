// Steward's HTTP server (node:http, no framework): the webhook path and the operations
// endpoints. Knows routing, timeouts and draining; the work is in the receiver and routes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { DeliveryIntake } from "./delivery-intake.js";
import type { Metrics } from "../ops/metrics.js";
import { createWebhookReceiver, DEFAULT_BODY_TIMEOUT_MS, MAX_BODY_BYTES, type WebhookReceiver } from "./receiver.js";
import { BodyAdmission, peerKey, type AdmissionLimits } from "./admission.js";
import { createOpsRoutes, type OpsRoute } from "../ops/endpoints.js";
import { sendJson, sendJsonAndClose } from "./respond.js";
import { safeErrorMessage } from "../log/redact.js";

export interface ServerTimeouts {
  /** Whole request headers must arrive within this (slow-loris). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** A webhook body must arrive whole within this (a stalled sender is cut off, answered 408). */
  bodyTimeoutMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  bodyTimeoutMs: DEFAULT_BODY_TIMEOUT_MS,
};

/** Pages mounted beside the webhook path (the console), which own their paths and methods. */
export interface MountedPages {
  owns(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/** Two sets of pages on one server; their paths never overlap (a Probot app's routes are refused where they would). */
export function withPages(first: MountedPages, second: MountedPages | undefined): MountedPages {
  if (!second) return first;
  return {
    owns: (path) => first.owns(path) || second.owns(path),
    handle: (req, res) => (first.owns(pathOf(req)) ? first : second).handle(req, res),
  };
}

export interface ServiceServerOptions {
  webhookPath: string;
  receiver: WebhookReceiver;
  ops: Record<string, OpsRoute>;
  pages?: MountedPages;
  logger: Logger;
  timeouts?: Partial<ServerTimeouts>;
  /** Connections one peer (IPv4 address, IPv6 /64) may hold open (default DEFAULT_MAX_CONNECTIONS_PER_PEER; 0: no cap). */
  maxConnectionsPerPeer?: number;
}

/**
 * Connections one peer may hold open at once. Node's own timeouts end each idle or slow one
 * (headers, keep-alive, request), but not a peer opening thousands; past this its new
 * connections are closed at once. Above what GitHub, or a load test's 200 connections, open.
 */
export const DEFAULT_MAX_CONNECTIONS_PER_PEER = 256;

export interface ServiceServer {
  server: Server;
  /** Refuse new deliveries (503) and report not ready from now on. */
  beginDrain(): void;
  isDraining(): boolean;
  /** The intake's admission of bodies (what it holds: `inFlight`), when the server has the webhook receiver. */
  admission?: BodyAdmission;
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/** Pure routing decision. */
export function route(
  method: string,
  path: string,
  webhookPath: string,
  opsPaths: readonly string[],
): { kind: "webhook" } | { kind: "ops" } | { kind: "refuse"; status: 404 | 405; allow?: string } {
  if (path === webhookPath)
    return method === "POST" ? { kind: "webhook" } : { kind: "refuse", status: 405, allow: "POST" };
  if (opsPaths.includes(path)) {
    return method === "GET" || method === "HEAD"
      ? { kind: "ops" }
      : { kind: "refuse", status: 405, allow: "GET, HEAD" };
  }
  return { kind: "refuse", status: 404 };
}

/** Build the server around a receiver and ops routes that read the same `drainState`. */
export function createServiceServer(opts: ServiceServerOptions & { drainState: DrainState }): ServiceServer {
  const log = opts.logger.child({ component: "http" });
  const opsPaths = Object.keys(opts.ops);
  const timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const method = req.method ?? "GET";
    const path = pathOf(req);
    const decision = route(method, path, opts.webhookPath, opsPaths);
    let work: Promise<void>;
    if (decision.kind === "refuse" && decision.status === 404 && opts.pages?.owns(path))
      work = opts.pages.handle(req, res);
    else if (decision.kind === "webhook") work = opts.receiver(req, res);
    else if (decision.kind === "ops") work = opts.ops[path]!(req, res);
    else {
      const message = decision.status === 404 ? "not found" : `method ${method} not allowed`;
      if (decision.allow) res.setHeader("allow", decision.allow);
      sendJsonAndClose(req, res, decision.status, message);
      return;
    }
    work.catch((error: unknown) => {
      log.error({ error: safeErrorMessage(error), path }, "request failed unexpectedly");
      if (!res.headersSent) sendJson(res, 503, { message: "temporarily unavailable" });
      else res.destroy();
    });
  }

  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      // Node only enforces the two timeouts above when it sweeps connections (30 s by default).
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(timeouts.headersTimeoutMs / 4))),
    },
    handle,
  );
  limitConnectionsPerPeer(server, opts.maxConnectionsPerPeer ?? DEFAULT_MAX_CONNECTIONS_PER_PEER);
  // Malformed HTTP must not reach the process: answer 400 and close.
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    const status =
      error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? "408 Request Timeout"
        : error.code === "HPE_HEADER_OVERFLOW"
          ? "431 Request Header Fields Too Large"
          : "400 Bad Request";
    if (socket.writable && !(socket as { _httpMessage?: unknown })._httpMessage) {
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    } else socket.destroy();
  });

  return {
    server,
    beginDrain: () => opts.drainState.begin(),
    isDraining: () => opts.drainState.draining,
  };
}

function limitConnectionsPerPeer(server: Server, max: number): void {
  if (!(max > 0)) return;
  const open = new Map<string, number>();
  server.on("connection", (socket) => {
    const key = peerKey(socket.remoteAddress);
    const count = (open.get(key) ?? 0) + 1;
    if (count > max) return void socket.destroy();
    open.set(key, count);
    socket.once("close", () => {
      const left = open.get(key)! - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
  });
}

/** Shared shutdown flag: the receiver and readiness read it, shutdown sets it. */
export class DrainState {
  draining = false;
  begin(): void {
    this.draining = true;
  }
}

/** The whole HTTP surface wired together: receiver, operations endpoints, server, drain flag. */
export function createStewardHttp(opts: {
  webhookPath: string;
  secrets: readonly string[];
  intake: DeliveryIntake;
  logger: Logger;
  metrics: Metrics;
  maxBodyBytes?: number;
  /** Request body bytes held at once, all deliveries together (default DEFAULT_MAX_BYTES_IN_FLIGHT). */
  maxBytesInFlight?: number;
  /** The rest of the intake's admission limits (bodies, and each peer's share). */
  admissionLimits?: Partial<AdmissionLimits>;
  /** Bytes a second a body must arrive at after its grace (default DEFAULT_BODY_MIN_RATE; 0: no floor). */
  bodyMinRate?: number;
  maxConnectionsPerPeer?: number;
  timeouts?: Partial<ServerTimeouts>;
  pages?: MountedPages;
}): ServiceServer {
  const drainState = new DrainState();
  const isDraining = () => drainState.draining;
  opts.metrics.setQueueDepthSource(() => opts.intake.depth());
  const admission = new BodyAdmission({
    ...opts.admissionLimits,
    ...(opts.maxBytesInFlight === undefined ? {} : { maxBytes: opts.maxBytesInFlight }),
    largestBody: opts.maxBodyBytes ?? MAX_BODY_BYTES,
  });
  const receiver = createWebhookReceiver({
    secrets: opts.secrets,
    intake: opts.intake,
    logger: opts.logger,
    metrics: opts.metrics,
    isDraining,
    maxBodyBytes: opts.maxBodyBytes,
    admission,
    bodyTimeoutMs: opts.timeouts?.bodyTimeoutMs ?? DEFAULT_TIMEOUTS.bodyTimeoutMs,
    ...(opts.bodyMinRate === undefined ? {} : { bodyMinRate: opts.bodyMinRate }),
  });
  const ops = createOpsRoutes({ intake: opts.intake, metrics: opts.metrics, logger: opts.logger, isDraining });
  const surface = createServiceServer({
    webhookPath: opts.webhookPath,
    receiver,
    ops,
    logger: opts.logger,
    timeouts: opts.timeouts,
    drainState,
    ...(opts.maxConnectionsPerPeer === undefined ? {} : { maxConnectionsPerPeer: opts.maxConnectionsPerPeer }),
    ...(opts.pages ? { pages: opts.pages } : {}),
  });
  return { ...surface, admission };
}
