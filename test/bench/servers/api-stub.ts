// The API Probot's burst handler calls: answers every request after a fixed delay (50 ms by
// default, STUB_DELAY_MS), in its own process so its timers do not share the load generator's loop.
import { createServer } from "node:http";

const delayMs = Number(process.env.STUB_DELAY_MS ?? 50);
const body = Buffer.from(JSON.stringify({ id: 1, status: "completed" }));
const server = createServer((req, res) => {
  req.resume();
  setTimeout(() => res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body), delayMs);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address && typeof address === "object") process.stdout.write(`PORT=${address.port}\n`);
});
process.on("message", (m) => {
  if (m === "usage") process.send?.({ rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS * 1024, cpu: process.cpuUsage() });
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
