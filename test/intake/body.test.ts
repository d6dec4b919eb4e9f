import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readBody, type BodyResult } from "../../src/intake/body.js";

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    // A refused body is never read to its end: its connection is cut, not waited for.
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server on 127.0.0.1 that reads each request's body with `limit` and hands over the result. */
async function reader(limit: number): Promise<{ url: URL; next(): Promise<BodyResult> }> {
  const results: BodyResult[] = [];
  const waiting: ((r: BodyResult) => void)[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    const result = await readBody(req, limit);
    res.end();
    const w = waiting.shift();
    if (w) w(result);
    else results.push(result);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  return {
    url,
    next: () => (results.length > 0 ? Promise.resolve(results.shift()!) : new Promise((r) => waiting.push(r))),
  };
}

/** Sends `parts` as one chunked body, each part its own write after the last reached the server. */
function send(url: URL, parts: Buffer[]): void {
  const req = request(url, { method: "POST", headers: { "transfer-encoding": "chunked" } });
  req.on("error", () => undefined);
  let i = 0;
  const step = () => {
    if (i === parts.length) return void req.end();
    req.write(parts[i++]!, () => setTimeout(step, 5));
  };
  step();
}

describe("readBody", () => {
  it("returns the bytes sent, whether they came in one chunk or in many", async () => {
    const r = await reader(1 << 20);
    const whole = Buffer.from(JSON.stringify({ text: "é".repeat(11_000) }), "utf8");
    await fetch(r.url, { method: "POST", body: whole });
    const one = await r.next();
    expect(one.ok && one.body.equals(whole)).toBe(true);

    send(r.url, [whole.subarray(0, 7), whole.subarray(7, 9_001), whole.subarray(9_001)]);
    const many = await r.next();
    expect(many.ok && many.body.equals(whole)).toBe(true);
  });

  it("refuses a body over the limit, counted while it streams", async () => {
    const r = await reader(1_000);
    send(r.url, [Buffer.alloc(600, 0x61), Buffer.alloc(600, 0x62)]);
    expect(await r.next()).toEqual({ ok: false, reason: "too-large" });
  });
});
