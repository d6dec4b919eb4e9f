// Delivery signatures: HMAC hex digests of the exact body sent.
import { createHmac } from "node:crypto";

export function signatureHeaders(secret: string, body: string): Record<string, string> {
  return {
    "X-Hub-Signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
    "X-Hub-Signature": `sha1=${createHmac("sha1", secret).update(body).digest("hex")}`,
  };
}

/** The body as the app's content type wants it: JSON, or a form with one `payload` field. */
export function encodeBody(
  payload: Record<string, unknown>,
  contentType: "json" | "form",
): { body: string; type: string } {
  const json = JSON.stringify(payload);
  if (contentType === "form")
    return { body: new URLSearchParams({ payload: json }).toString(), type: "application/x-www-form-urlencoded" };
  return { body: json, type: "application/json" };
}
