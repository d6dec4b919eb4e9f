// The child side of child.ts for a plain node:http server: listen on a free loopback port, print
// it, answer "usage" with RSS and CPU time, close on SIGTERM.
import type { Server } from "node:http";

export function serveAsChild(server: Server): void {
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    if (address && typeof address === "object") process.stdout.write(`PORT=${address.port}\n`);
  });
  process.on("message", (m) => {
    if (m === "usage") process.send?.({ rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS * 1024, cpu: process.cpuUsage(), minorFaults: process.resourceUsage().minorPageFault });
  });
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}
