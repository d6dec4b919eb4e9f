// A real store with one of its methods replaced, to inject a fault (a busy or failing store) into
// the code under test while everything else reaches the store itself.
import type { Store } from "../../src/store/types.js";

const METHODS = ["claim", "release", "replaceIf", "get", "set", "delete", "list", "audit", "auditLog"] as const;

/** `store` with `overrides` in place of its own methods (the rest bound to it). */
export function storeWith(store: Store, overrides: Partial<Store>): Store {
  const bound = Object.fromEntries(
    METHODS.map((m) => [m, (store[m] as (...a: unknown[]) => unknown).bind(store)]),
  ) as unknown as Store;
  return { ...bound, ...overrides };
}
