// WEBHOOK_PROXY_URL against a local smee-style Server-Sent Events channel over real HTTP:
// relayed deliveries reach the handlers through Steward's webhook path (signature checked,
// recorded, deduplicated), a malformed event is logged and skipped, a dropped connection is
// reconnected, and shutdown disconnects for good.
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { defineHandler } from "../../src/handler.js";
import { relayedDelivery } from "../../src/intake/webhook-proxy.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { collectingLogger } from "../service/helpers.js";

const opened = (examples as { name: string; examples: Record<string, unknown>[] }[])
  .find((e) => e.name === "issues")!
  .examples.find((e) => e.action === "opened")!;

/** A smee-style channel: GET /channel is the event stream; `publish` sends one event's data to every listener. */
class Channel {
  readonly server: Server;
  readonly listeners = new Set<ServerResponse>();
  connections = 0;
  constructor() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== "/channel/s3cr3t-channel") {
        res.writeHead(404).end();
        return;
      }
      this.connections++;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write("event: ready\ndata: {}\n\n");
      this.listeners.add(res);
      res.on("close", () => this.listeners.delete(res));
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/channel/s3cr3t-channel`;
  }
  publish(data: string): void {
    for (const res of this.listeners) res.write(`data: ${data}\n\n`);
  }
  /** Cut every open stream, as a relay restarting does. */
  drop(): void {
    for (const res of this.listeners) res.destroy();
  }
}

let seq = 0;
/** The message smee sends for a delivery: headers as lowercase keys, the parsed body, a query and a timestamp. */
function smeeMessage(
  secret: string,
  payload: object,
  overrides: Record<string, string> = {},
): { data: string; guid: string } {
  const guid = `proxy-${process.pid}-${Date.now()}-${++seq}`;
  const body = JSON.stringify(payload);
  return {
    guid,
    data: JSON.stringify({
      host: "smee.io",
      "content-type": "application/json",
      "content-length": String(body.length),
      "x-github-event": "issues",
      "x-github-delivery": guid,
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      "user-agent": "GitHub-Hookshot/abc",
      ...overrides,
      body: payload,
      query: {},
      timestamp: Date.now(),
    }),
  };
}

const seen: string[] = [];
const recorder = defineHandler({
  name: "recorder",
  events: ["issues.opened"],
  async handle(ctx) {
    seen.push(ctx.deliveryId);
    return { status: "done" };
  },
});

let channel: Channel;
let stack: SandboxStack;
let secret: string;
const logs = collectingLogger("debug");

beforeAll(async () => {
  channel = new Channel();
  const url = await channel.listen();
  stack = await startSandboxStack({ handlers: [recorder], logger: logs.logger, env: { WEBHOOK_PROXY_URL: url } });
  secret = stack.hub.env.WEBHOOK_SECRET;
  await vi.waitFor(() => expect(channel.listeners.size).toBe(1), { timeout: 30_000, interval: 20 });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  channel?.server.close();
});

// Room above the 30 s waits below (several in one test) for a loaded machine.
describe("WEBHOOK_PROXY_URL", { timeout: 120_000 }, () => {
  it("forwards relayed deliveries through the webhook path to the handlers, once per delivery id", async () => {
    const first = smeeMessage(secret, opened);
    channel.publish(first.data);
    channel.publish(first.data); // a relay sending it twice: deduplicated like any redelivery
    await vi.waitFor(() => expect(seen).toContain(first.guid), { timeout: 30_000, interval: 20 });
    const stored = await stack.steward.store.deliveries.getDelivery(first.guid);
    expect(stored?.delivery.event).toBe("issues");
    await vi.waitFor(() => expect(logs.output()).toMatch(new RegExp(`"deliveryId":"${first.guid}","status":200`)), {
      timeout: 30_000,
      interval: 20,
    });
    expect(seen.filter((g) => g === first.guid)).toHaveLength(1);
  });

  it("refuses a relayed delivery whose signature does not verify, and says why", async () => {
    const forged = smeeMessage("not-the-secret", opened);
    channel.publish(forged.data);
    await vi.waitFor(() => expect(logs.output()).toMatch(/relayed delivery refused: its signature does not match/), {
      timeout: 30_000,
      interval: 20,
    });
    expect(await stack.steward.store.deliveries.getDelivery(forged.guid)).toBeUndefined();
  });

  it("logs and skips a malformed event without stopping the stream", async () => {
    channel.publish("this is not json");
    channel.publish(JSON.stringify({ body: {} }));
    const after = smeeMessage(secret, opened);
    channel.publish(after.data);
    await vi.waitFor(() => expect(seen).toContain(after.guid), { timeout: 30_000, interval: 20 });
    expect(logs.output()).toMatch(/relayed event skipped: its data is not JSON/);
    expect(logs.output()).toMatch(/relayed event skipped: it has no x-github-event header/);
    expect(channel.connections).toBe(1);
  });

  it("reconnects after the channel drops the connection", async () => {
    channel.drop();
    await vi.waitFor(() => expect(channel.connections).toBe(2), { timeout: 30_000, interval: 20 });
    await vi.waitFor(() => expect(channel.listeners.size).toBe(1), { timeout: 30_000, interval: 20 });
    const again = smeeMessage(secret, opened);
    channel.publish(again.data);
    await vi.waitFor(() => expect(seen).toContain(again.guid), { timeout: 30_000, interval: 20 });
    expect(logs.output()).toMatch(/webhook proxy channel disconnected; reconnecting/);
  });

  it("never logs the channel's key", () => {
    expect(logs.output()).toContain(`"channel":"http://127.0.0.1:`);
    expect(logs.output()).not.toContain("s3cr3t-channel");
  });

  it("disconnects on shutdown and does not come back", async () => {
    const connections = channel.connections;
    await stack.close();
    await vi.waitFor(() => expect(channel.listeners.size).toBe(0), { timeout: 30_000, interval: 20 });
    expect(logs.output()).toMatch(/webhook proxy stopped/);
    // Past the first reconnection delay (1 s), nothing connected again.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(channel.connections).toBe(connections);
  });
});

describe("relayedDelivery", () => {
  it("keeps the delivery's headers, drops the relay's transport headers, and re-serialises the body compactly", () => {
    const out = relayedDelivery(smeeMessage("s", { a: 1, b: "é" }).data);
    if ("error" in out) throw new Error(out.error);
    expect(out.body).toBe('{"a":1,"b":"é"}');
    expect(Object.keys(out.headers).sort()).toEqual([
      "content-type",
      "user-agent",
      "x-github-delivery",
      "x-github-event",
      "x-hub-signature-256",
    ]);
  });

  it("encodes a form-encoded delivery back as a form", () => {
    const out = relayedDelivery(
      JSON.stringify({
        "x-github-event": "ping",
        "x-hub-signature-256": "sha256=00",
        "content-type": "application/x-www-form-urlencoded",
        body: { payload: '{"zen":"x"}' },
      }),
    );
    if ("error" in out) throw new Error(out.error);
    expect(new URLSearchParams(out.body).get("payload")).toBe('{"zen":"x"}');
  });

  it("names what is wrong with a malformed event", () => {
    expect(relayedDelivery("[1]")).toEqual({ error: "its data is not a JSON object" });
    expect(relayedDelivery(JSON.stringify({ "x-github-event": "push" }))).toEqual({ error: "it has no body object" });
    expect(relayedDelivery(JSON.stringify({ "x-github-event": "push", body: {} }))).toEqual({
      error: "it is unsigned (no x-hub-signature-256 header)",
    });
  });
});
