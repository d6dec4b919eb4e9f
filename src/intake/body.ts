// Reads a request body with a hard size limit: the declared Content-Length is checked
// before reading, and bytes are counted while streaming, so an oversized body is refused
// after at most `limit` bytes and never held whole. The intake also charges each chunk to the
// body's admission (admission.ts) as it arrives and holds the sender to a minimum rate.
import type { IncomingMessage } from "node:http";
import type { AdmittedBody } from "./admission.js";

export type BodyResult =
  { ok: true; body: Buffer } | { ok: false; reason: "too-large" | "aborted" | "timeout" | "too-slow" | "no-room" };

/** A floor under how fast a body must arrive, after a grace period. */
export interface MinRate {
  bytesPerSecond: number;
  graceMs: number;
}

export interface ReadOptions {
  /** The whole body must have arrived within this. */
  timeoutMs?: number;
  /**
   * From `graceMs` on, a body must have delivered `bytesPerSecond` for every second past the
   * grace: a sender that trickles is cut off soon after the grace, whatever its declared length.
   */
  minRate?: MinRate;
  /**
   * Each chunk is charged here before it is kept (false refuses the body, "no-room"), and the
   * body is cut off ("no-room") if it must give its room up.
   */
  admitted?: Pick<AdmittedBody, "charge" | "onEvict">;
}

/** The declared Content-Length, or undefined when the body is chunked (or the header is not a number). */
export function declaredLength(req: IncomingMessage): number | undefined {
  const declared = req.headers["content-length"];
  return declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : undefined;
}

/** Whether the declared length alone already exceeds the limit. */
export function declaredTooLarge(req: IncomingMessage, limit: number): boolean {
  return (declaredLength(req) ?? 0) > limit;
}

/**
 * Reads the whole body, at most `limit` bytes, within `timeoutMs` (a sender that stalls or
 * trickles is cut off long before the server's request timeout).
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  timeoutOrOptions: number | ReadOptions = {},
): Promise<BodyResult> {
  const opts: ReadOptions = typeof timeoutOrOptions === "number" ? { timeoutMs: timeoutOrOptions } : timeoutOrOptions;
  const timeoutMs = opts.timeoutMs ?? Number.POSITIVE_INFINITY;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const startedAt = performance.now();
    let rateTimer: NodeJS.Timeout | undefined;
    let rateRecheck: NodeJS.Immediate | undefined;
    const finish = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      if (rateTimer) clearTimeout(rateTimer);
      if (rateRecheck) clearImmediate(rateRecheck);
      // What was held is let go at once, whatever the outcome.
      if (!result.ok) chunks.length = 0;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("aborted", onAbort);
      resolve(result);
    };
    const refuse = (reason: "too-large" | "timeout" | "too-slow" | "no-room") => {
      req.pause();
      finish({ ok: false, reason });
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return refuse("too-large");
      if (opts.admitted && !opts.admitted.charge(chunk.length)) return refuse("no-room");
      chunks.push(chunk);
    };
    // Node's HTTP parser hands each body chunk over in a buffer of its own, so a body that came
    // in one chunk (most deliveries) is kept as it is rather than copied into another.
    const onEnd = () => finish({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onAbort = () => finish({ ok: false, reason: "aborted" });
    const timer = Number.isFinite(timeoutMs) ? setTimeout(() => refuse("timeout"), timeoutMs) : undefined;
    const rate = opts.minRate && opts.minRate.bytesPerSecond > 0 ? opts.minRate : undefined;
    const behind = () => size < (rate!.bytesPerSecond * (performance.now() - startedAt - rate!.graceMs)) / 1000;
    // Checked when the bytes so far stop covering the floor, not on every chunk.
    const armRateCheck = () => {
      const dueAt = startedAt + rate!.graceMs + (size * 1000) / rate!.bytesPerSecond;
      rateTimer = setTimeout(checkRate, Math.max(250, dueAt - performance.now()));
    };
    const checkRate = () => {
      if (!behind()) return armRateCheck();
      // A timer can fire before bytes that arrived while the event loop was busy were read: judge
      // again after this turn's reads, so our own stall never counts against a sender.
      rateRecheck = setImmediate(() => (behind() ? refuse("too-slow") : armRateCheck()));
    };
    if (rate) armRateCheck();
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("aborted", onAbort);
    opts.admitted?.onEvict(() => refuse("no-room"));
  });
}
