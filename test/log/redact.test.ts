// The one redactor (src/log/redact.ts): each credential shape it masks by itself, registered
// secrets and a configuration's own, one mask everywhere, and ordinary text left readable.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  MASK,
  MAX_ROTATING_VALUES,
  ROTATING_KEEP_MS,
  containsRegisteredSecret,
  errorText,
  registerSecret,
  safeErrorMessage,
  scrub,
} from "../../src/log/redact.js";
import { loadConfig } from "../../src/config/env.js";
import { createTokenCache } from "../../src/coordination/token-cache.js";
import { appKey } from "../support/app-key.js";
import { maskSecretKeys } from "../../src/log/mask-keys.js";

const alnum = (n: number) =>
  randomBytes(n * 2)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "")
    .slice(0, n);
const b64url = (bytes: number) => randomBytes(bytes).toString("base64url");

/** `text` with `secret` in it comes out masked, with no piece of the secret left and the words around it kept. */
function expectMasked(secret: string, make = (s: string) => `request failed with ${s} (retry later)`): string {
  const out = scrub(make(secret));
  expect(out).toContain(MASK);
  expect(out).not.toContain(secret.slice(0, 12));
  expect(out).not.toContain(secret.slice(-8));
  expect(out).toContain("request failed with");
  expect(out).toContain("(retry later)");
  return out;
}

describe("credential shapes, never registered", () => {
  it.each(["ghp", "ghs", "gho", "ghu", "ghr"])("classic %s_ tokens (40 characters)", (prefix) => {
    expect(expectMasked(`${prefix}_${alnum(36)}`)).toBe(`request failed with ${MASK} (retry later)`);
  });

  it("short token-shaped values (8 characters after the prefix)", () => {
    expect(scrub(`got ghs_${alnum(8)} back`)).toBe(`got ${MASK} back`);
  });

  it("fine-grained github_pat_ tokens", () => {
    expectMasked(`github_pat_11${alnum(20)}_${alnum(59)}`);
  });

  it("long installation tokens ghs_<app id>_<JWT>, whole (dots, dashes and underscores included)", () => {
    const token = `ghs_123456_eyJ${b64url(30)}.eyJ${b64url(150)}.${b64url(256)}`;
    expect(token.length).toBeGreaterThan(500);
    expect(expectMasked(token, (s) => `request failed with "${s}". (retry later)`)).toBe(
      `request failed with "${MASK}". (retry later)`,
    );
  });

  it("JWTs (app authentication)", () => {
    const jwt = `eyJ${b64url(20)}.eyJ${b64url(40)}.${b64url(64)}`;
    expect(expectMasked(jwt)).toBe(`request failed with ${MASK} (retry later)`);
  });

  it("PEM private keys, whole or cut short", () => {
    const pem = generateKeyPairSync("rsa", { modulusLength: 2048 })
      .privateKey.export({ type: "pkcs1", format: "pem" })
      .toString();
    expect(expectMasked(pem.trim())).toBe(`request failed with ${MASK} (retry later)`);
    const cut = pem.slice(0, 200);
    const out = scrub(`cannot parse key: ${cut}`);
    expect(out).toBe(`cannot parse key: ${MASK}`);
  });

  it("header values: authorization (bearer, token, basic) and webhook signatures", () => {
    expect(scrub(`authorization: token ${alnum(20)}`)).toBe(`authorization: ${MASK}`);
    expect(scrub(`{"Authorization":"Basic ${b64url(24)}"}`)).toBe(`{"Authorization":"${MASK}"}`);
    expect(scrub(`x-hub-signature-256=sha256=${randomBytes(32).toString("hex")}`)).toBe(`x-hub-signature-256=${MASK}`);
  });

  it("a credential after bearer or token in prose, keeping the word", () => {
    expect(scrub(`401 for bearer ${alnum(10)}9x`)).toBe(`401 for bearer ${MASK}`);
    expect(scrub("refused token 0a1b2c3d4e5f6a7b8c9d")).toBe(`refused token ${MASK}`);
  });
});

describe("secrets by value", () => {
  afterEach(() => void vi.useRealTimers());

  it("registered values: as they are, JSON-escaped and a PEM's body lines", () => {
    const value = `value-${alnum(16)}`;
    registerSecret(value);
    expect(containsRegisteredSecret(`x ${value} y`)).toBe(true);
    expect(scrub(`x ${value} y`)).toBe(`x ${MASK} y`);
    const multi = `first-${alnum(10)}\nsecond-${alnum(10)}`;
    registerSecret(multi);
    expect(scrub(JSON.stringify({ m: multi }))).toBe(`{"m":"${MASK}"}`);
    const pem = generateKeyPairSync("ec", { namedCurve: "P-256" })
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString();
    registerSecret(pem);
    const bodyLine = pem.split("\n")[1]!;
    expect(scrub(`line: ${bodyLine}`)).toBe(`line: ${MASK}`);
  });

  it("the configuration's secrets stay masked however many installation tokens came after them", () => {
    // A webhook secret has no shape a pattern knows: only its registration masks it.
    const webhookSecret = `hook-${alnum(24)}`;
    const reviewer = `reviewer-${alnum(24)}`;
    loadConfig({
      APP_ID: "4242",
      PRIVATE_KEY: appKey().privateKey,
      WEBHOOK_SECRET: webhookSecret,
      STEWARD_REVIEWER_TOKEN: reviewer,
    });
    expect(scrub(`signed with ${webhookSecret}`)).toBe(`signed with ${MASK}`);
    // A year of hourly tokens of a few installations, through the token cache as auth-app stores them
    // (no token shape either: a server may issue any string).
    const cache = createTokenCache();
    const issued = (i: number) => `tok${String(i).padStart(8, "0")}${alnum(12)}`;
    const first = issued(0);
    cache.set("installation-1", `${first}|2026-11-27T00:00:00Z|2026-11-27T01:00:00Z|{}|`);
    let last = first;
    for (let i = 1; i <= MAX_ROTATING_VALUES + 10; i++) {
      last = issued(i);
      cache.set(`installation-${i % 7}`, `${last}|2026-11-27T00:00:00Z|2026-11-27T01:00:00Z|{}|`);
    }
    expect(scrub(`signed with ${webhookSecret}`)).toBe(`signed with ${MASK}`);
    expect(scrub(`reviewing as ${reviewer}`)).toBe(`reviewing as ${MASK}`);
    expect(containsRegisteredSecret(`x ${webhookSecret} y`)).toBe(true);
    // Only the tokens are bounded: the newest stay, the oldest went.
    expect(scrub(`token ${last}`)).not.toContain(last);
    expect(containsRegisteredSecret(last)).toBe(true);
    expect(containsRegisteredSecret(first)).toBe(false);
    // A configuration secret seen again as a token (the same string) is not made rotating.
    registerSecret(webhookSecret, { rotating: true });
    for (let i = 0; i < MAX_ROTATING_VALUES + 1; i++)
      registerSecret(`again${String(i).padStart(8, "0")}${alnum(8)}`, { rotating: true });
    expect(containsRegisteredSecret(webhookSecret)).toBe(true);
  }, 60_000);

  it("lets an installation token go two hours after it was first seen, never a configuration's secret", () => {
    vi.useFakeTimers({ now: Date.parse("2030-01-01T00:00:00Z"), toFake: ["Date"] });
    const webhookSecret = `hook-${alnum(24)}`;
    loadConfig({ APP_ID: "4242", PRIVATE_KEY: appKey().privateKey, WEBHOOK_SECRET: webhookSecret });
    const cache = createTokenCache();
    const mint = () => {
      const token = `tok${alnum(30)}`;
      const at = new Date(Date.now());
      cache.set(
        "installation-1",
        `${token}|${at.toISOString()}|${new Date(at.getTime() + 3_600_000).toISOString()}|{}|`,
      );
      return token;
    };
    const first = mint();
    vi.advanceTimersByTime(ROTATING_KEEP_MS - 60_000);
    const second = mint();
    expect(containsRegisteredSecret(first)).toBe(true);
    vi.advanceTimersByTime(120_000);
    const third = mint();
    expect(containsRegisteredSecret(first)).toBe(false);
    expect(containsRegisteredSecret(second)).toBe(true);
    expect(containsRegisteredSecret(third)).toBe(true);
    vi.advanceTimersByTime(10 * ROTATING_KEEP_MS);
    mint();
    expect(containsRegisteredSecret(second)).toBe(false);
    expect(scrub(`signed with ${webhookSecret}`)).toBe(`signed with ${MASK}`);
  });

  it("values handed in (a configuration's own, never registered) are masked the same way", () => {
    const own = `own-${alnum(20)}`;
    expect(containsRegisteredSecret(own)).toBe(false);
    expect(scrub(`failed with ${own} and "${own}"`, [own])).toBe(`failed with ${MASK} and "${MASK}"`);
    expect(scrub(`failed with ${own}`)).toBe(`failed with ${own}`);
    // Too short to be a secret: masking it would mask words.
    expect(scrub("a b c", ["b"])).toBe("a b c");
  });
});

describe("one mask, readable text", () => {
  it("every path masks with the same mask", () => {
    const token = `ghs_${alnum(36)}`;
    expect(scrub(token)).toBe(MASK);
    expect(safeErrorMessage(new Error(token))).toBe(MASK);
    expect(maskSecretKeys({ token: "x" })).toEqual({ token: MASK });
  });

  it("leaves ordinary text alone", () => {
    for (const text of [
      "token refreshed for installation 42",
      "bearer of bad news",
      "ghs_ prefix",
      "github_pat_ prefix",
      "eyJ alone",
      "the authorization header was missing",
    ]) {
      expect(scrub(text)).toBe(text);
    }
  });

  it("error text: an AggregateError's errors, an Error's name when it has no message, anything else as a string", () => {
    const token = `ghp_${alnum(36)}`;
    const aggregate = new AggregateError(
      [new Error("connect ECONNREFUSED 127.0.0.1:1"), new Error(`denied for ${token}`)],
      "",
    );
    expect(errorText(aggregate)).toBe(`connect ECONNREFUSED 127.0.0.1:1; denied for ${token}`);
    expect(safeErrorMessage(aggregate)).toBe(`connect ECONNREFUSED 127.0.0.1:1; denied for ${MASK}`);
    expect(errorText(new TypeError(""))).toBe("TypeError");
    expect(errorText(42)).toBe("42");
  });
});
