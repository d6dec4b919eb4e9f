// The child's side of a server under test (child.ts starts it): report `url`, answer "idle" after
// `idle()` with the process's peak resident memory so far, close on SIGTERM. Plain JavaScript, so
// that a server runs under plain Node with no loader, as its users run it.
import { createServer } from "node:http";

/**
 * @param {string} url
 * @param {() => Promise<unknown>} idle
 * @param {() => Promise<unknown>} close
 */
export function serveUnderTest(url, idle, close) {
  process.send({ url });
  process.on("message", (m) => {
    if (m === "idle") void idle().then(() => process.send({ maxRss: process.resourceUsage().maxRSS * 1024 }));
  });
  process.once("SIGTERM", () => void close().finally(() => process.exit(0)));
}

/**
 * A Probot app's Node middleware served on a port of its own, as its users serve it, then reported
 * as the server under test.
 *
 * @param {(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse, next: () => void) => unknown} middleware
 * @param {() => Promise<unknown>} idle
 * @param {() => Promise<unknown>} close
 */
export function serveProbot(middleware, idle, close) {
  const server = createServer((req, res) => void middleware(req, res, () => res.writeHead(404).end()));
  server.listen(0, "127.0.0.1", () => {
    const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
    serveUnderTest(`http://127.0.0.1:${port}/api/github/webhooks`, idle, async () => {
      server.close();
      await close();
    });
  });
}
