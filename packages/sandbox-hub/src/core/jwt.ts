// App JWT verification (RS256 against the app's public key), with the claim rules
// GitHub applies: `iss` is the app id, `exp` in the future and at most ten minutes
// after `iat`, `iat` not in the future (60 s of clock drift allowed).
import { createVerify, type KeyObject } from "node:crypto";

export type JwtResult = { ok: true; appId: number } | { ok: false; reason: string };

const MAX_LIFETIME_S = 10 * 60;
const DRIFT_S = 60;

export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);
}

export function verifyAppJwt(
  jwt: string,
  publicKeyFor: (appId: number) => KeyObject | undefined,
  now: Date,
): JwtResult {
  const [headerB64, payloadB64, signatureB64] = jwt.split(".");
  if (!headerB64 || !payloadB64 || signatureB64 === undefined) return { ok: false, reason: "malformed" };
  let header: { alg?: string };
  let claims: { iss?: unknown; iat?: unknown; exp?: unknown };
  try {
    header = JSON.parse(Buffer.from(headerB64, "base64url").toString("utf8"));
    claims = JSON.parse(Buffer.from(payloadB64, "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "malformed" };
  }
  if (header.alg !== "RS256") return { ok: false, reason: "alg" };
  const appId = Number(claims.iss);
  const key = Number.isInteger(appId) ? publicKeyFor(appId) : undefined;
  if (!key) return { ok: false, reason: "unknown app" };
  const verifier = createVerify("RSA-SHA256");
  verifier.update(`${headerB64}.${payloadB64}`);
  if (!verifier.verify(key, Buffer.from(signatureB64, "base64url"))) return { ok: false, reason: "signature" };
  const nowS = Math.floor(now.getTime() / 1000);
  if (typeof claims.iat !== "number" || typeof claims.exp !== "number") return { ok: false, reason: "claims" };
  if (claims.exp <= nowS) return { ok: false, reason: "expired" };
  if (claims.iat > nowS + DRIFT_S) return { ok: false, reason: "iat in the future" };
  if (claims.exp - claims.iat > MAX_LIFETIME_S + DRIFT_S) return { ok: false, reason: "exp too far" };
  return { ok: true, appId };
}
