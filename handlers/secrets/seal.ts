// Encryption for the secrets API: a libsodium sealed box under the scope's public key, sent
// with that key's id. Public keys are cached per scope and dropped when the API refuses one.
import type { Requester } from "./api.js";
import { scopeKey, type Scope } from "./targets.js";

export interface PublicKey {
  key_id: string;
  key: string;
}

export function publicKeyRoute(org: string, scope: Scope): { route: string; params: Record<string, unknown> } {
  switch (scope.level) {
    case "org":
      return { route: "GET /orgs/{org}/actions/secrets/public-key", params: { org } };
    case "repo":
      return {
        route: "GET /repos/{owner}/{repo}/actions/secrets/public-key",
        params: { owner: org, repo: scope.repo },
      };
    case "env":
      return {
        route: "GET /repos/{owner}/{repo}/environments/{environment_name}/secrets/public-key",
        params: { owner: org, repo: scope.repo, environment_name: scope.environment },
      };
  }
}

/** Public keys by API base, organisation and scope; shared by every sync in this process. */
export class PublicKeyCache {
  private readonly keys = new Map<string, Promise<PublicKey>>();
  /** Public-key requests made (tests and metrics judge the cache by it). */
  fetches = 0;

  constructor(private readonly namespace: string) {}

  private id(org: string, scope: Scope): string {
    return `${this.namespace}|${org.toLowerCase()}|${scopeKey(scope)}`;
  }

  get(api: Requester, org: string, scope: Scope): Promise<PublicKey> {
    const id = this.id(org, scope);
    let key = this.keys.get(id);
    if (!key) {
      const { route, params } = publicKeyRoute(org, scope);
      this.fetches++;
      key = api.request(route, params).then((res) => ({ key_id: String(res.data.key_id), key: String(res.data.key) }));
      this.keys.set(id, key);
      key.catch(() => this.keys.delete(id));
    }
    return key;
  }

  /** The scope's key was rotated (the API refused the key id): fetch it again next time. */
  invalidate(org: string, scope: Scope): void {
    this.keys.delete(this.id(org, scope));
  }
}

/** Sealed box of `value` under the base64 `publicKey`, base64 as the API expects. */
export async function seal(value: string, publicKey: string): Promise<string> {
  // Loaded at the first seal: libsodium is a few MB that a service which never syncs secrets need not hold.
  const { default: sodium } = await import("libsodium-wrappers");
  await sodium.ready;
  const sealed = sodium.crypto_box_seal(
    sodium.from_string(value),
    sodium.from_base64(publicKey, sodium.base64_variants.ORIGINAL),
  );
  return sodium.to_base64(sealed, sodium.base64_variants.ORIGINAL);
}
