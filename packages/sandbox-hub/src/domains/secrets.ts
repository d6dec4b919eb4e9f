// Actions secrets at repository, organisation and environment level. Each scope has a real
// curve25519 key pair; a written value must open as a libsodium sealed box under the scope's
// current key. The opened value is kept for tests (openedValue) and never returned by the API.
import { randomInt } from "node:crypto";
import sodium from "libsodium-wrappers";
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import { assertWithinLimits } from "./quotas.js";
import type { EffectsLog } from "./effects.js";
import { applySelection, assertNoProblems, nameProblems, selectionKind, type SelectionChange, reaches, resolveScope, ScopedItems, scopeKey, visibilityProblems, type Scope, type ScopeRef, type Visibility } from "./scopes.js";

await sodium.ready;

export interface KeyPair {
  key_id: string;
  publicKey: Uint8Array;
  privateKey: Uint8Array;
}

export interface Secret {
  name: string;
  created_at: string;
  updated_at: string;
  /** The opened plaintext (tests only). */
  value: string;
  visibility: Visibility | null;
  selected: number[];
}

export interface PutSecretBody {
  encrypted_value?: unknown;
  key_id?: unknown;
  visibility?: unknown;
  selected_repository_ids?: unknown;
}

const b64 = (bytes: Uint8Array) => sodium.to_base64(bytes, sodium.base64_variants.ORIGINAL);

export class SecretsDomain extends ScopedItems<Secret> {
  private readonly keys = new Map<string, KeyPair>();

  constructor(
    private readonly hub: Hub,
    private readonly effects: EffectsLog,
  ) {
    super();
  }

  // ---- keys -------------------------------------------------------------------------------

  keyOf(scope: Scope): KeyPair {
    const k = scopeKey(scope);
    let pair = this.keys.get(k);
    if (!pair) {
      pair = this.newKey();
      this.keys.set(k, pair);
    }
    return pair;
  }

  publicKeyJson(scope: Scope): { key_id: string; key: string } {
    const pair = this.keyOf(scope);
    return { key_id: pair.key_id, key: b64(pair.publicKey) };
  }

  /** Replace a scope's key pair (values sealed under the old key are refused from now on). */
  rotateKey(ref: ScopeRef | Scope): { key_id: string; key: string } {
    const scope = this.scope(ref);
    this.keys.set(scopeKey(scope), this.newKey());
    this.effects.record({ domain: "secrets", kind: "key.rotated", by: "control", detail: { scope: scopeKey(scope) } });
    return this.publicKeyJson(scope);
  }

  // ---- secrets ----------------------------------------------------------------------------

  /** `PUT .../secrets/{name}`: create or update. Returns whether it was created (201) or updated (204). */
  put(scope: Scope, rawName: string, body: PutSecretBody, by: string): "created" | "updated" {
    assertNoProblems(nameProblems(rawName, "Secret", "secret_name"));
    const name = rawName.toUpperCase();
    const existing = this.get(scope, name);
    if (scope.kind === "org") {
      const visibility = body.visibility ?? existing?.visibility ?? undefined;
      assertNoProblems(visibilityProblems(this.hub, scope.org, visibility, body.selected_repository_ids, "Secret", existing === undefined));
    } else if (body.visibility !== undefined || body.selected_repository_ids !== undefined) {
      assertNoProblems([{ resource: "Secret", field: body.visibility !== undefined ? "visibility" : "selected_repository_ids", code: "invalid", message: "only organization secrets have a visibility" }]);
    }
    let value = existing?.value;
    if (body.encrypted_value !== undefined || existing === undefined) value = this.open(scope, body);
    assertWithinLimits("Secret", scope, { creating: existing === undefined, count: this.storeOf(scope).size, ...(value === undefined ? {} : { value }) });

    const now = this.hub.timestamp();
    const store = this.storeOf(scope);
    const secret: Secret = existing ?? { name, created_at: now, updated_at: now, value: value!, visibility: null, selected: [] };
    secret.value = value!;
    secret.updated_at = now;
    if (scope.kind === "org") {
      secret.visibility = (body.visibility as Visibility | undefined) ?? secret.visibility ?? "all";
      if (body.selected_repository_ids !== undefined) secret.selected = [...(body.selected_repository_ids as number[])];
      if (secret.visibility !== "selected") secret.selected = [];
    }
    store.set(name, secret);
    this.countWrite(scope);
    this.effects.record({ domain: "secrets", kind: existing ? "secret.updated" : "secret.created", by, detail: { scope: scopeKey(scope), name } });
    return existing ? "updated" : "created";
  }

  delete(scope: Scope, name: string, by: string): void {
    const secret = this.require(scope, name);
    this.storeOf(scope).delete(secret.name);
    this.countWrite(scope);
    this.effects.record({ domain: "secrets", kind: "secret.deleted", by, detail: { scope: scopeKey(scope), name: secret.name } });
  }

  /** Organisation secrets a repository can use. */
  orgSecretsFor(repo: Repo): Secret[] {
    return this.list({ kind: "org", org: repo.owner }).filter((s) => reaches({ visibility: s.visibility ?? "all", selected: s.selected }, repo));
  }

  /** The selected-repositories operations of an organisation secret. */
  changeSelection(org: string, name: string, change: SelectionChange, by: string): void {
    const secret = this.requireSelectable(org, name);
    secret.selected = applySelection(secret.selected, change);
    this.effects.record({ domain: "secrets", kind: `secret.repositories.${selectionKind(change)}`, by, detail: { org, name: secret.name, ids: secret.selected } });
  }

  /** The selected-repository operations only apply to `selected` secrets (the API answers 409 otherwise). */
  requireSelectable(org: string, name: string): Secret {
    const secret = this.require({ kind: "org", org }, name);
    if (secret.visibility !== "selected") throw new HubError(409, `Secret ${secret.name} does not have visibility selected`);
    return secret;
  }

  // ---- control ----------------------------------------------------------------------------

  /** The plaintext the hub opened for a secret (undefined when there is none). */
  openedValue(ref: ScopeRef | Scope, name: string): string | undefined {
    return this.get(this.scope(ref), name)?.value;
  }

  /** Simulate a person editing a secret in the UI: sets the value and bumps `updated_at`. */
  setSecretOutOfBand(ref: ScopeRef | Scope, name: string, value: string, o: { visibility?: Visibility; selected?: number[] } = {}): Secret {
    const scope = this.scope(ref);
    const now = this.hub.timestamp();
    const key = name.toUpperCase();
    const store = this.storeOf(scope);
    const secret = store.get(key) ?? { name: key, created_at: now, updated_at: now, value, visibility: scope.kind === "org" ? "all" : null, selected: [] };
    secret.value = value;
    secret.updated_at = now;
    if (o.visibility) secret.visibility = o.visibility;
    if (o.selected) secret.selected = [...o.selected];
    store.set(key, secret);
    this.effects.record({ domain: "secrets", kind: "secret.out_of_band", by: "control", detail: { scope: scopeKey(scope), name: key } });
    return secret;
  }

  /** API writes (create, update, delete) in a scope. */
  writesTo(ref: ScopeRef | Scope): number {
    return this.writes.get(scopeKey(this.scope(ref))) ?? 0;
  }

  /** Seal a value under a scope's current key, as a client would (for seeding and demos). */
  seal(ref: ScopeRef | Scope, value: string): { encrypted_value: string; key_id: string } {
    const pair = this.keyOf(this.scope(ref));
    return { encrypted_value: b64(sodium.crypto_box_seal(sodium.from_string(value), pair.publicKey)), key_id: pair.key_id };
  }

  // ---- internals --------------------------------------------------------------------------

  private scope(ref: ScopeRef | Scope): Scope {
    return "kind" in ref ? ref : resolveScope(this.hub, ref);
  }

  private open(scope: Scope, body: PutSecretBody): string {
    const invalid = (field: string, code: string, message?: string) =>
      new HubError(422, "Validation Failed", [{ resource: "Secret", field, code, ...(message ? { message } : {}) }]);
    if (typeof body.encrypted_value !== "string" || body.encrypted_value.length === 0) throw invalid("encrypted_value", "missing_field");
    if (typeof body.key_id !== "string" || body.key_id.length === 0) throw invalid("key_id", "missing_field");
    const pair = this.keyOf(scope);
    if (body.key_id !== pair.key_id) throw invalid("key_id", "invalid", "key_id does not match the current public key of this scope");
    let sealed: Uint8Array;
    try {
      sealed = sodium.from_base64(body.encrypted_value, sodium.base64_variants.ORIGINAL);
    } catch {
      throw invalid("encrypted_value", "invalid", "encrypted_value must be base64 encoded");
    }
    try {
      return sodium.to_string(sodium.crypto_box_seal_open(sealed, pair.publicKey, pair.privateKey));
    } catch {
      throw invalid("encrypted_value", "invalid", "encrypted_value could not be decrypted with the public key of this scope");
    }
  }

  private newKey(): KeyPair {
    const kp = sodium.crypto_box_keypair();
    // The service's key ids are long decimal strings.
    const key_id = `${randomInt(100_000_000, 999_999_999)}${randomInt(100_000_000, 999_999_999)}`;
    return { key_id, publicKey: kp.publicKey, privateKey: kp.privateKey };
  }
}
