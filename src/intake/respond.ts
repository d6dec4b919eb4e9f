// Small HTTP answer helpers shared by the intake and the operations endpoints.
import type { IncomingMessage, ServerResponse } from "node:http";

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

/**
 * Answer and then close the connection without reading the rest of the request body:
 * used when the body must not be read (too large) or the server is going away. The write
 * side is ended gracefully so the client receives the answer; the socket is destroyed
 * shortly after in case the client keeps sending.
 */
export function sendJsonAndClose(req: IncomingMessage, res: ServerResponse, status: number, message: string): void {
  req.pause();
  const socket = req.socket;
  res.on("finish", () => {
    socket.pause();
    socket.end();
    setTimeout(() => socket.destroy(), 2_000).unref();
  });
  sendJson(res, status, { message }, { connection: "close" });
}
