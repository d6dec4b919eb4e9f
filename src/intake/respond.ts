// Small HTTP answer helpers shared by the intake and the operations endpoints.
import type { IncomingMessage, ServerResponse } from "node:http";

/** A fixed JSON answer encoded once: the intake's answers repeat on every delivery. */
export interface PreparedJson {
  status: number;
  body: Buffer;
  headers: Record<string, string | number>;
}

export function prepareJson(status: number, body: Record<string, unknown>): PreparedJson {
  const bytes = Buffer.from(JSON.stringify(body));
  return {
    status,
    body: bytes,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "content-length": bytes.length,
      "cache-control": "no-store",
    },
  };
}

export function sendPrepared(res: ServerResponse, answer: PreparedJson): void {
  if (res.headersSent) return;
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(text);
}

/** How long, and how many bytes, a refused request is still read (and dropped) after its answer. */
export const LINGER_MS = 5_000;
export const LINGER_BYTES = 4 * 1024 * 1024;

/**
 * Answer, then close the connection without keeping the rest of the request body: used when the
 * body must not be read (too large, no room at admission) or the server is going away.
 *
 * Closing a socket that still has unread request bytes sends a reset, and a reset makes the
 * client's system drop the answer it has not read yet: with `connection: close` Node closes as soon
 * as the answer is flushed, so a client still sending often never saw its 413. So our side is
 * ended (FIN) and what the client still sends is read and dropped, nothing kept, until it stops or
 * LINGER_BYTES were dropped; past that, reading stops (the client's sending blocks, it can still
 * read its answer) and the socket is destroyed LINGER_MS after the answer.
 */
export function sendJsonAndClose(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const socket = req.socket;
  if (!socket.destroyed) {
    const cutOff = () => socket.destroy();
    const timer = setTimeout(cutOff, LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
    // Node calls destroySoon() once a `connection: close` answer is flushed: end our side only.
    (socket as { destroySoon?: () => void }).destroySoon = () => socket.end();
    let dropped = 0;
    req.on("data", (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > LINGER_BYTES) req.pause();
    });
    req.on("end", () => socket.end());
    req.resume();
  }
  sendJson(res, status, { message }, { connection: "close", ...headers });
}
