// The one merge rule of Steward's policy: maps merge deeply, lists (and scalars) replace,
// the overriding side wins. Used for org-under-repo files and for defaults-under-values.
import type { HandlerModule } from "../handler.js";

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** Deep merge: maps merge key by key, lists replace (never concatenate), `over` wins. Inputs are not modified. */
export function mergePolicy(base: unknown, over: unknown): unknown {
  if (over === undefined) return clone(base);
  if (isPlainObject(base) && isPlainObject(over)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(base)) setOwn(out, k, clone(v));
    for (const [k, v] of Object.entries(over))
      setOwn(out, k, mergePolicy(Object.hasOwn(base, k) ? base[k] : undefined, v));
    return out;
  }
  return clone(over);
}

function clone(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clone);
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, k, clone(v));
    return out;
  }
  return value;
}

/** Plain assignment would treat a `__proto__` key from a policy file as the prototype. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * The sections of a (merged) steward.yml value with every handler's defaults underneath.
 * Keys of handlers without a section are dropped; a section left empty (`checks:`) counts as unset.
 */
export function applySectionDefaults(value: unknown, handlers: readonly HandlerModule<any>[]): Record<string, unknown> {
  const given = isPlainObject(value) ? value : {};
  const out: Record<string, unknown> = {};
  for (const section of policySections(handlers)) {
    const v = given[section.key];
    out[section.key] = mergePolicy(section.defaults, v === null ? undefined : v);
  }
  return out;
}

/** The policy sections declared by `handlers`, first declaration of a key wins. */
export function policySections(handlers: readonly HandlerModule<any>[]) {
  const seen = new Map<string, NonNullable<HandlerModule<any>["policy"]>>();
  for (const h of handlers) if (h.policy && !seen.has(h.policy.key)) seen.set(h.policy.key, h.policy);
  return [...seen.values()];
}

/** The admin documents declared by `handlers`, by path. */
export function policyDocuments(handlers: readonly HandlerModule<any>[]) {
  const seen = new Map<string, NonNullable<HandlerModule<any>["documents"]>[number]>();
  for (const h of handlers) for (const d of h.documents ?? []) if (!seen.has(d.path)) seen.set(d.path, d);
  return seen;
}
