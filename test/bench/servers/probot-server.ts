// The comparison point: a minimal Probot app served by Probot's own Node middleware,
// with a no-op handler for the same events Steward takes. Prints its port on stdout. With
// API_STUB_URL set (the burst section) the handler makes one API call inline, awaited before
// Probot answers, as a handler doing its work in the request does.
import { createServer } from "node:http";
import { serveAsChild } from "./serve.js";
import { generateKeyPairSync } from "node:crypto";
import { Probot, createNodeMiddleware } from "probot";

const secret = process.env.WEBHOOK_SECRET ?? "bench-secret";
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const probot = new Probot({
  appId: 1,
  privateKey: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
  secret,
  logLevel: "warn",
});
const middleware = await createNodeMiddleware(
  (app) => {
    const api = process.env.API_STUB_URL;
    app.onAny(async () => {
      if (api) await (await fetch(api)).arrayBuffer();
    });
  },
  { probot, webhooksPath: "/api/github/webhooks" },
);
const server = createServer((req, res) => {
  void middleware(req, res, () => {
    res.writeHead(404).end();
  });
});
serveAsChild(server);
