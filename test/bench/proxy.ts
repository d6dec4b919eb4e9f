// A forwarding proxy between the hub and Steward that stamps when each delivery arrived, so
// end-to-end latency is measured on one clock from "the hub sent it" to "the answer reached the hub".
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Arrival {
  event: string;
  /** Parsed payload (JSON deliveries only). */
  payload: Record<string, any>;
  at: number;
}

export interface StampingProxy {
  url: string;
  arrivals: Arrival[];
  close(): Promise<void>;
}

export async function startStampingProxy(target: string): Promise<StampingProxy> {
  const arrivals: Arrival[] = [];
  const to = new URL(target);
  const server: Server = createServer((req, res) => {
    // Date.now(): the hub stamps its request records with the same clock.
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      try {
        arrivals.push({ event: String(req.headers["x-github-event"] ?? ""), payload: JSON.parse(body.toString("utf8")), at });
      } catch {
        // Not JSON (form-encoded hook config): forwarded, not timed.
      }
      const out = request(
        { host: to.hostname, port: to.port, path: to.pathname, method: req.method, headers: { ...req.headers, host: to.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on("error", () => res.writeHead(502).end());
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${to.pathname}`,
    arrivals,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
