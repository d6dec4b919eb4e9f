import { describe, expect, it } from "vitest";
import { registerSecret, scrub } from "../../src/log/redact.js";
import { maskSecretKeys } from "../../src/log/mask-keys.js";
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
    logger.info(
      { headers: { authorization: "token abc123def456" }, token: "plain-token-value", privateKey: "pem" },
      "request",
    );
    logger.info("sending Authorization: bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.c2lnbmF0dXJl now");
    logger.info("got ghs_16C7e42F292c6912E7710c838347Ae178B4a from the API");
    const text = output();
    for (const leak of [
      "abc123def456",
      "plain-token-value",
      "eyJhbGciOiJSUzI1NiJ9",
      "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
    ]) {
      expect(text).not.toContain(leak);
    }
  });

  it("masks credential-named keys at any depth, in child bindings and in errors' own properties", () => {
    const { logger, output } = collectingLogger();
    logger.info({ a: { b: { c: { request: { body: { Token: "deep-unregistered-1" } } } } } }, "deep");
    logger
      .child({ config: { webhookSecret: "child-unregistered-2" } })
      .child({ ok: 1 })
      .info("nested child");
    const error = Object.assign(new Error("request failed"), { response: { data: { token: "err-unregistered-3" } } });
    logger.error({ err: error }, "failed");
    logger.info({ list: [{ password: "array-unregistered-4" }] }, "array");
    const text = output();
    for (const leak of ["deep-unregistered-1", "child-unregistered-2", "err-unregistered-3", "array-unregistered-4"])
      expect(text).not.toContain(leak);
    expect(text).toContain("request failed");
    expect(text).toContain('"ok":1');
  });

  it("copies only what it masks: objects without credential-named keys come back as they are", () => {
    const clean = { delivery: "d1", nested: { event: "push", list: [1, { n: 2 }] } };
    expect(maskSecretKeys(clean)).toBe(clean);
    const withToken = { keep: { event: "push" }, auth: { token: "t", user: "u" } };
    const masked = maskSecretKeys(withToken);
    expect(masked).toEqual({ keep: { event: "push" }, auth: { token: "[REDACTED]", user: "u" } });
    expect(masked.keep).toBe(withToken.keep);
    expect(withToken.auth.token).toBe("t");
    const error = maskSecretKeys(Object.assign(new TypeError("boom"), { secret: "s" }));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe("boom");
    expect(error.secret).toBe("[REDACTED]");
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
