// Reads a request body with a hard size limit: the declared Content-Length is checked
// before reading, and bytes are counted while streaming, so an oversized body is refused
// after at most `limit` bytes and never held whole.
import type { IncomingMessage } from "node:http";

export type BodyResult =
  | { ok: true; body: Buffer }
  | { ok: false; reason: "too-large" | "aborted" | "timeout" };

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
export function readBody(req: IncomingMessage, limit: number, timeoutMs = Number.POSITIVE_INFINITY): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      // What was held is let go at once, whatever the outcome.
      if (!result.ok) chunks.length = 0;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("aborted", onAbort);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        req.pause();
        finish({ ok: false, reason: "too-large" });
        return;
      }
      chunks.push(chunk);
    };
    // Node's HTTP parser hands each body chunk over in a buffer of its own, so a body that came
    // in one chunk (most deliveries) is kept as it is rather than copied into another.
    const onEnd = () => finish({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onAbort = () => finish({ ok: false, reason: "aborted" });
    const timer = Number.isFinite(timeoutMs)
      ? setTimeout(() => {
          req.pause();
          finish({ ok: false, reason: "timeout" });
        }, timeoutMs)
      : undefined;
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("aborted", onAbort);
  });
}
