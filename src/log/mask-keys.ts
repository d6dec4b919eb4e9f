// Masks the values of credential-named keys at any depth of a logged object. This replaces
// pino's path redaction, whose wildcard paths ("*.token", "*.*.token", ...) ran a redactor
// with every path over every key of every line and every child logger's bindings: a
// per-delivery cost in the worker even with nothing logged. Here a walk finds the keys in
// one pass, and objects without one are returned as they are (no copy).

import { MASK } from "./redact.js";

// Keys whose values are credentials wherever they appear (compared case-insensitively).
const SECRET_KEYS = new Set(
  [
    "authorization",
    "token",
    "privateKey",
    "private_key",
    "secret",
    "secrets",
    "webhookSecret",
    "webhookSecrets",
    "reviewerToken",
    "password",
    "jwt",
  ].map((k) => k.toLowerCase()),
);

/** Deeper than any object Steward logs; bounds the walk on cyclic or huge values. */
const MAX_DEPTH = 8;

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

function walkable(value: unknown): value is object {
  return (
    typeof value === "object" &&
    value !== null &&
    !ArrayBuffer.isView(value) &&
    !(value instanceof Map) &&
    !(value instanceof Set)
  );
}

/** Same prototype and own properties (an Error stays an Error, message and stack included). */
function shallowCopy(value: object): Record<string, unknown> {
  if (Array.isArray(value)) return value.slice() as unknown as Record<string, unknown>;
  return Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as Record<
    string,
    unknown
  >;
}

function setData(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * `value` with every credential-named key's value replaced by the mask, copying only the
 * objects on the way to such a key. Walks what JSON output shows: own enumerable keys.
 */
export function maskSecretKeys<T>(value: T, depth = 0): T {
  if (!walkable(value) || depth >= MAX_DEPTH) return value;
  let copy: Record<string, unknown> | undefined;
  const source = value as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    const inner = source[key];
    let next: unknown;
    if (isSecretKey(key) && inner !== undefined && inner !== null) next = MASK;
    else {
      next = maskSecretKeys(inner, depth + 1);
      if (next === inner) continue;
    }
    copy ??= shallowCopy(value);
    setData(copy, key, next);
  }
  return (copy ?? value) as T;
}
