import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { request } from "node:http";
import { signBody } from "../../src/intake/signature.js";
import { startHttp, type RunningHttp } from "./helpers.js";

let running: RunningHttp;
beforeAll(async () => {
  running = await startHttp();
});
afterAll(async () => {
  await running.close();
});

const ALLOWED = new Set([200, 202, 400, 401, 404, 405, 413, 415]);

/** Raw request through node:http so odd header values are sent as given. */
function send(method: string, path: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: running.port, method, path, headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const token = fc.stringMatching(/^[A-Za-z0-9_.:-]{0,40}$/);

describe("intake under arbitrary input", () => {
  it("answers every request with a documented status and keeps serving", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          method: fc.constantFrom("POST", "GET", "PUT", "DELETE", "PATCH"),
          path: fc.constantFrom(
            "/api/github/webhooks",
            "/api/github/webhooks?x=1",
            "/",
            "/healthz/x",
            "/api/github/webhooksx",
          ),
          event: fc.option(token, { nil: undefined }),
          id: fc.option(token, { nil: undefined }),
          contentType: fc.option(
            fc.constantFrom(
              "application/json",
              "application/x-www-form-urlencoded",
              "text/plain",
              "application/json; charset=utf-8",
              "",
            ),
            { nil: undefined },
          ),
          body: fc.oneof(
            fc.uint8Array({ maxLength: 512 }).map((a) => Buffer.from(a)),
            fc.json().map((j) => Buffer.from(j)),
            fc.json().map((j) => Buffer.from(new URLSearchParams({ payload: j }).toString())),
          ),
          signed: fc.boolean(),
        }),
        async (input) => {
          const headers: Record<string, string> = {};
          if (input.event !== undefined) headers["x-github-event"] = input.event;
          if (input.id !== undefined) headers["x-github-delivery"] = input.id;
          if (input.contentType !== undefined) headers["content-type"] = input.contentType;
          headers["x-hub-signature-256"] = input.signed ? signBody("test-secret", input.body) : "sha256=00";
          const status = await send(input.method, input.path, headers, input.body);
          expect(ALLOWED.has(status), `status ${status}`).toBe(true);
          // A delivery is only ever recorded when it was properly signed.
          if (status === 202) expect(input.signed).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
  });
});
