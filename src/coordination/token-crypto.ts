// Installation tokens at rest in a shared store are sealed with AES-256-GCM under a key
// derived (HKDF-SHA-256) from the app's private key, which only the app holds: whoever reads
// the store alone gets no usable token. The store key is the associated data, so a sealed
// token copied to another installation's entry fails to open instead of being used there.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export type SealingKey = Buffer & { readonly __sealingKey: unique symbol };

/** The key for sealing tokens of app `appId`; a different private key or app gives a different key. */
export function deriveSealingKey(privateKey: string, appId: number | string): SealingKey {
  const ikm = Buffer.from(privateKey.trim(), "utf8");
  return Buffer.from(
    hkdfSync("sha256", ikm, "steward/installation-token-cache", `app:${String(appId)}`, 32),
  ) as SealingKey;
}

export function seal(key: SealingKey, plaintext: string, associated: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(associated, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")}`;
}

/** The plaintext, or undefined when the value was not sealed by this key for this store key (or was altered). */
export function open(key: SealingKey, sealed: string, associated: string): string | undefined {
  const [version, data] = sealed.split(".");
  if (version !== VERSION || !data) return undefined;
  const raw = Buffer.from(data, "base64url");
  if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(associated, "utf8"));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}
