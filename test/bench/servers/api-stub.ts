// The API Probot's burst handler calls: answers every request after a fixed delay (50 ms by
// default, STUB_DELAY_MS), in its own process so its timers do not share the load generator's loop.
import { createServer } from "node:http";
import { serveAsChild } from "./serve.js";

const delayMs = Number(process.env.STUB_DELAY_MS ?? 50);
const body = Buffer.from(JSON.stringify({ id: 1, status: "completed" }));
const server = createServer((req, res) => {
  req.resume();
  setTimeout(() => res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body), delayMs);
});
server.keepAliveTimeout = 60_000;
serveAsChild(server);
