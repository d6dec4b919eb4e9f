// SENTRY_DSN: a handler's unexpected failure reaches the DSN's ingest (here an HTTP server on
// 127.0.0.1 standing for Sentry's) as an event, scrubbed as log lines are: the webhook secret and a
// token-shaped string it quoted arrive masked. The leak guard reads the envelope as sent, too.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { defineHandler } from "../../src/handler.js";
import { loadConfig } from "../../src/config/env.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";
import { appKey } from "../support/app-key.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!
  .examples[0]!;

const envelopes: { path: string; body: string }[] = [];
let ingest: Server;
let port: number;
const scope = perTest();

beforeAll(async () => {
  ingest = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body = Buffer.concat(chunks);
      if (String(req.headers["content-encoding"] ?? "").includes("gzip")) body = gunzipSync(body);
      envelopes.push({ path: req.url ?? "", body: body.toString("utf8") });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => ingest.listen(0, "127.0.0.1", resolve));
  port = (ingest.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => ingest?.close(() => resolve()));
});

describe("error reporting (SENTRY_DSN)", () => {
  it("reads the DSN as Probot does, and refuses one that is not a DSN without quoting it", () => {
    const base = { APP_ID: "1", PRIVATE_KEY: appKey().privateKey, WEBHOOK_SECRET: "s3cret-value" };
    expect(loadConfig({ ...base, SENTRY_DSN: "https://abc123@o1.ingest.example/42" }).sentryDsn).toBe(
      "https://abc123@o1.ingest.example/42",
    );
    expect(loadConfig(base).sentryDsn).toBeUndefined();
    expect(() => loadConfig({ ...base, SENTRY_DSN: "keyonly-not-a-url" })).toThrow(/SENTRY_DSN/);
    expect(() => loadConfig({ ...base, SENTRY_DSN: "keyonly-not-a-url" })).not.toThrow(/keyonly/);
  });

  it("sends a handler's thrown error to the DSN's ingest, scrubbed by the log's redaction", async () => {
    const hub = await scope.hub();
    const installation = hub.control.installation("acme")!.id;
    const secret = `whsec-${randomBytes(16).toString("hex")}`;
    const thrower = defineHandler<undefined>({
      name: "thrower",
      events: ["push"],
      async handle() {
        throw new Error(`upstream refused secret ${secret} with token ghs_${"A1b2C3".repeat(6)}`);
      },
    });
    const { logger } = collectingLogger("warn");
    const steward = await scope.steward({
      config: testConfig({
        appId: Number(hub.env.APP_ID),
        privateKey: hub.env.PRIVATE_KEY,
        apiUrl: hub.url,
        dataDir: await scope.dataDir("sentry"),
        webhookSecrets: [secret],
        maxAttempts: 1,
        sentryDsn: `http://publickey@127.0.0.1:${port}/1`,
      }),
      logger,
      handlers: [thrower],
    });
    const body = JSON.stringify({ ...push, installation: { id: installation } });
    expect((await postDelivery(steward.url, { body, id: deliveryId(), event: "push", secret })).status).toBe(202);
    await steward.engine.idle();
    await steward.close(); // flushes what is queued

    const events = () => envelopes.filter((e) => e.path.startsWith("/api/1/envelope"));
    await vi.waitFor(() => expect(events().some((e) => e.body.includes("upstream refused secret"))).toBe(true), {
      timeout: 30_000,
    });
    const thrown = events().find((e) => e.body.includes("upstream refused secret"))!.body;
    expect(thrown).toContain('"steward.what":"handler threw"');
    expect(thrown).toContain('"handler":"thrower"');
    expect(thrown).toContain("[REDACTED]");
    expect(thrown).not.toContain(secret);
    expect(thrown).not.toMatch(/ghs_A1b2/);
    // Parked as dead after its only attempt: reported too, as scrubbed.
    const dead = events().find((e) => e.body.includes("delivery parked as dead"));
    expect(dead).toBeDefined();
    expect(dead!.body).not.toContain(secret);
    expect(
      events()
        .map((e) => e.body)
        .join("\n"),
    ).not.toContain(hub.env.PRIVATE_KEY.split("\n")[1]!);
  });
});
