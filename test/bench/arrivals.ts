// When each delivery reached Steward's HTTP server, stamped in Steward's own process through
// Node's `http.server.request.start` diagnostics channel (published as a request's headers are
// parsed, before any application code runs). The hub's delivery log then says what each delivery
// was about. Nothing stands between the hub and Steward, so the instrument adds no hop and no
// parse to the event loop it measures.
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";

const CHANNEL = "http.server.request.start";

export interface ArrivalStamps {
  /** performance.now() when the delivery's request reached Steward: the hub's `receivedAtHr` is on the same clock (one process). */
  at(deliveryId: string): number | undefined;
  close(): void;
}

export function stampArrivals(webhookPath: string): ArrivalStamps {
  const stamps = new Map<string, number>();
  const listener = (message: unknown) => {
    const { request } = message as { request: IncomingMessage };
    const id = request.headers["x-github-delivery"];
    if (typeof id === "string" && request.method === "POST" && request.url?.split("?")[0] === webhookPath) stamps.set(id, performance.now());
  };
  subscribe(CHANNEL, listener);
  return { at: (id) => stamps.get(id), close: () => unsubscribe(CHANNEL, listener) };
}
