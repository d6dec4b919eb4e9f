// Console sessions in cookies: JSON sealed with AES-256-GCM (encrypted, and the tag
// authenticates it: a changed cookie does not open), with an expiry inside the sealed part,
// sent HttpOnly and SameSite=Lax. The key comes from a secret only the server has.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface Sealer {
  seal(value: unknown, purpose: string, ttlMs: number): string;
  /** The value, or undefined when the cookie was changed, sealed for another purpose, or expired. */
  open<T>(sealed: string | undefined, purpose: string): T | undefined;
}

/** One key per secret; `purpose` is bound as additional data, so a sign-in cookie never opens as a session. */
export function createSealer(secret: string, now: () => number = Date.now): Sealer {
  const key = Buffer.from(hkdfSync("sha256", secret, "steward-console", "session cookies v1", 32));
  return {
    seal(value, purpose, ttlMs) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(purpose));
      const plain = Buffer.from(JSON.stringify({ v: value, exp: now() + ttlMs }));
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
    },
    open<T>(sealed: string | undefined, purpose: string): T | undefined {
      if (!sealed || sealed.length > 8_192) return undefined;
      const raw = Buffer.from(sealed, "base64url");
      if (raw.length < IV_BYTES + TAG_BYTES + 1) return undefined;
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
        decipher.setAAD(Buffer.from(purpose));
        decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
        const plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
        const { v, exp } = JSON.parse(plain.toString("utf8")) as { v: T; exp: number };
        return typeof exp === "number" && exp > now() ? v : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

export function readCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

export function cookie(
  name: string,
  value: string,
  opts: { maxAgeSeconds: number; secure: boolean; path?: string },
): string {
  const parts = [
    `${name}=${value}`,
    `Path=${opts.path ?? "/"}`,
    "HttpOnly",
    "SameSite=Lax",
    `Max-Age=${opts.maxAgeSeconds}`,
  ];
  if (opts.secure) parts.push("Secure");
  return parts.join("; ");
}
