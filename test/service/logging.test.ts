import { describe, expect, it } from "vitest";
import { registerSecret, scrub } from "../../src/log/redact.js";
import { collectingLogger } from "./helpers.js";

const SECRET = "correct-horse-battery-staple";
registerSecret(SECRET);

describe("redacting logger", () => {
  it("keeps a registered secret out of messages, objects, errors and stacks", () => {
    const { logger, output } = collectingLogger();
    logger.info(`connecting with ${SECRET}`);
    logger.info({ config: { webhookSecrets: [SECRET] }, note: `value=${SECRET}` }, "object");
    const error = new Error(`request failed: bad credential ${SECRET}`);
    logger.error({ err: error }, "failed");
    logger.warn({ error }, "failed again");
    logger.child({ leaked: SECRET }).info("child bindings");
    const text = output();
    expect(text.split("\n").filter(Boolean)).toHaveLength(5);
    expect(text).not.toContain(SECRET);
    expect(text).toContain("[REDACTED]");
    expect(text).toContain("request failed: bad credential");
  });

  it("masks credential-bearing keys and credential-shaped strings that were never registered", () => {
    const { logger, output } = collectingLogger();
    logger.info({ headers: { authorization: "token abc123def456" }, token: "plain-token-value", privateKey: "pem" }, "request");
    logger.info("sending Authorization: bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.c2lnbmF0dXJl now");
    logger.info("got ghs_16C7e42F292c6912E7710c838347Ae178B4a from the API");
    const text = output();
    for (const leak of ["abc123def456", "plain-token-value", "eyJhbGciOiJSUzI1NiJ9", "ghs_16C7e42F292c6912E7710c838347Ae178B4a"]) {
      expect(text).not.toContain(leak);
    }
  });

  it("masks secrets in pretty output too", async () => {
    const { createLogger } = await import("../../src/log/logger.js");
    const { Writable } = await import("node:stream");
    let out = "";
    const destination = new Writable({ write: (c, _e, cb) => ((out += c.toString()), cb()) });
    createLogger({ level: "info", format: "pretty", destination }).info({ value: SECRET }, `pretty ${SECRET}`);
    await new Promise((r) => setImmediate(r));
    expect(out).toContain("pretty");
    expect(out).not.toContain(SECRET);
  });

  it("scrub masks registered values inside JSON-escaped text", () => {
    const multi = "line-one-secret\nline-two-secret";
    registerSecret(multi);
    expect(scrub(JSON.stringify({ m: multi }))).not.toContain("line-one-secret\\nline-two");
  });
});
