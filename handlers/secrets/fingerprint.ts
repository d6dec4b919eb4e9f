// Keyed fingerprints of written values. A plain hash of a short secret can be brute-forced
// from the store; an HMAC under a service-side key cannot without the key.
import { createHmac, randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile, chmod } from "node:fs/promises";
import { join } from "node:path";

export const FINGERPRINT_KEY_FILE = "secrets-fingerprint.key";

const keys = new Map<string, Promise<Buffer>>();

async function loadOrCreate(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  try {
    // `wx`: if two processes race, exactly one key wins and the other reads it.
    await writeFile(file, randomBytes(32), { flag: "wx", mode: 0o600 });
    await chmod(file, 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  return readFile(file);
}

/** The service's fingerprint key in `dataDir`, created once (0600). */
export async function fingerprintKey(dataDir: string): Promise<Buffer> {
  const file = join(dataDir, FINGERPRINT_KEY_FILE);
  let key = keys.get(file);
  if (!key) {
    key = mkdir(dataDir, { recursive: true }).then(() => loadOrCreate(file));
    keys.set(file, key);
    key.catch(() => keys.delete(file));
  }
  return key;
}

/** HMAC-SHA256 over the target key and the value: equal values in two targets do not look equal. */
export function fingerprint(key: Buffer, targetKey: string, value: string): string {
  return createHmac("sha256", key).update(targetKey).update("\0").update(value).digest("base64url");
}
