// An RSA key for tests that configure an app but never reach an API with it (config parsing,
// start-up failures, shutdown). One per test process: generation is the slow part.
import { createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";

let cachedKey: { privateKey: string; publicKey: KeyObject } | undefined;
export function appKey(): { privateKey: string; publicKey: KeyObject } {
  if (!cachedKey) {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    cachedKey = { privateKey: pem, publicKey: createPublicKey(privateKey) };
  }
  return cachedKey;
}
