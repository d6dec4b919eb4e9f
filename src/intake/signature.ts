// X-Hub-Signature-256: HMAC-SHA256 of the raw body bytes, hex, prefixed "sha256=".
// Several secrets may be configured during a rotation; any one verifies.
import { createHmac, timingSafeEqual } from "node:crypto";

const PREFIX = "sha256=";

export function signBody(secret: string, body: Buffer | string): string {
  return PREFIX + createHmac("sha256", secret).update(body).digest("hex");
}

/** True when `header` is a valid signature of `body` under one of `secrets`. */
export function verifySignature(secrets: readonly string[], body: Buffer, header: string | undefined): boolean {
  if (!header || !header.startsWith(PREFIX)) return false;
  const hex = header.slice(PREFIX.length).trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) return false;
  const given = Buffer.from(hex, "hex");
  let ok = false;
  // Check every secret (no early exit) so timing does not reveal which one matched.
  for (const secret of secrets) {
    const expected = createHmac("sha256", secret).update(body).digest();
    ok = timingSafeEqual(expected, given) || ok;
  }
  return ok;
}
