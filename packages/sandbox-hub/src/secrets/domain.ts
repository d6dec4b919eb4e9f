// Actions secrets at repository, organisation and environment level. Each scope has a real
// curve25519 key pair; a written value must open as a libsodium sealed box under the scope's
// current key. The opened value is kept for tests (openedValue) and never returned by the API.
import { randomInt } from "node:crypto";
import sodium from "libsodium-wrappers";
import type { EffectsLog } from "../core/effects.js";
import type { Hub } from "../core/types.js";
import { HubError } from "../core/types.js";
import { assertWithinLimits } from "../scoped-values/quotas.js";
import { ScopedValues, type ScopedValue } from "../scoped-values/values.js";
import {
  assertNoProblems,
  nameProblems,
  scopeKey,
  visibilityProblems,
  type Scope,
  type ScopeRef,
  type Visibility,
} from "../scoped-values/scopes.js";

await sodium.ready;

export interface KeyPair {
  key_id: string;
  publicKey: Uint8Array;
  privateKey: Uint8Array;
}

/** `value` is the opened plaintext (tests only). */
export type Secret = ScopedValue;

export interface PutSecretBody {
  encrypted_value?: unknown;
  key_id?: unknown;
  visibility?: unknown;
  selected_repository_ids?: unknown;
}

const b64 = (bytes: Uint8Array) => sodium.to_base64(bytes, sodium.base64_variants.ORIGINAL);

export class SecretsDomain extends ScopedValues<Secret> {
  private readonly keys = new Map<string, KeyPair>();

  constructor(hub: Hub, effects: EffectsLog) {
    super(hub, effects, { resource: "Secret", area: "secrets", showsValue: false });
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
    this.effects.record("secrets.key.rotated", "control", { scope: scopeKey(scope) });
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
      assertNoProblems(
        visibilityProblems(
          this.hub,
          scope.org,
          visibility,
          body.selected_repository_ids,
          "Secret",
          existing === undefined,
        ),
      );
    } else if (body.visibility !== undefined || body.selected_repository_ids !== undefined) {
      assertNoProblems([
        {
          resource: "Secret",
          field: body.visibility !== undefined ? "visibility" : "selected_repository_ids",
          code: "invalid",
          message: "only organization secrets have a visibility",
        },
      ]);
    }
    let value = existing?.value;
    if (body.encrypted_value !== undefined || existing === undefined) value = this.open(scope, body);
    assertWithinLimits("Secret", scope, {
      creating: existing === undefined,
      count: this.storeOf(scope).size,
      ...(value === undefined ? {} : { value }),
    });

    const now = this.hub.timestamp();
    const store = this.storeOf(scope);
    const secret: Secret = existing ?? {
      name,
      created_at: now,
      updated_at: now,
      value: value!,
      visibility: null,
      selected: [],
    };
    secret.value = value!;
    secret.updated_at = now;
    if (scope.kind === "org") {
      secret.visibility = (body.visibility as Visibility | undefined) ?? secret.visibility ?? "all";
      if (body.selected_repository_ids !== undefined) secret.selected = [...(body.selected_repository_ids as number[])];
      if (secret.visibility !== "selected") secret.selected = [];
    }
    store.set(name, secret);
    this.written(scope, existing ? "updated" : "created", by, name);
    return existing ? "updated" : "created";
  }

  // ---- control ----------------------------------------------------------------------------

  /** The plaintext the hub opened for a secret (undefined when there is none). */
  openedValue(ref: ScopeRef | Scope, name: string): string | undefined {
    return this.valueIn(ref, name);
  }

  /** Simulate a person editing a secret in the UI: sets the value and bumps `updated_at`. */
  setSecretOutOfBand(
    ref: ScopeRef | Scope,
    name: string,
    value: string,
    o: { visibility?: Visibility; selected?: number[] } = {},
  ): Secret {
    return this.setOutOfBand(ref, name, value, o);
  }

  /** Seal a value under a scope's current key, as a client would (for seeding and demos). */
  seal(ref: ScopeRef | Scope, value: string): { encrypted_value: string; key_id: string } {
    const pair = this.keyOf(this.scope(ref));
    return {
      encrypted_value: b64(sodium.crypto_box_seal(sodium.from_string(value), pair.publicKey)),
      key_id: pair.key_id,
    };
  }

  // ---- internals --------------------------------------------------------------------------

  private open(scope: Scope, body: PutSecretBody): string {
    const invalid = (field: string, code: string, message?: string) =>
      new HubError(422, "Validation Failed", [{ resource: "Secret", field, code, ...(message ? { message } : {}) }]);
    if (typeof body.encrypted_value !== "string" || body.encrypted_value.length === 0)
      throw invalid("encrypted_value", "missing_field");
    if (typeof body.key_id !== "string" || body.key_id.length === 0) throw invalid("key_id", "missing_field");
    const pair = this.keyOf(scope);
    if (body.key_id !== pair.key_id)
      throw invalid("key_id", "invalid", "key_id does not match the current public key of this scope");
    let sealed: Uint8Array;
    try {
      sealed = sodium.from_base64(body.encrypted_value, sodium.base64_variants.ORIGINAL);
    } catch {
      throw invalid("encrypted_value", "invalid", "encrypted_value must be base64 encoded");
    }
    try {
      return sodium.to_string(sodium.crypto_box_seal_open(sealed, pair.publicKey, pair.privateKey));
    } catch {
      throw invalid(
        "encrypted_value",
        "invalid",
        "encrypted_value could not be decrypted with the public key of this scope",
      );
    }
  }

  private newKey(): KeyPair {
    const kp = sodium.crypto_box_keypair();
    // The service's key ids are long decimal strings.
    const key_id = `${randomInt(100_000_000, 999_999_999)}${randomInt(100_000_000, 999_999_999)}`;
    return { key_id, publicKey: kp.publicKey, privateKey: kp.privateKey };
  }
}
