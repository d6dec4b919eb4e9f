// Steward's memory of what it wrote, per target: fingerprint, remote updated_at after the
// write, and whether its write created the target. Never a value.
import type { Store } from "../../src/index.js";
import type { TargetRecord } from "./targets.js";

export function recordPrefix(org: string): string {
  return `secrets/target/${org.toLowerCase()}/`;
}

export async function loadRecords(store: Pick<Store, "list">, org: string): Promise<Map<string, TargetRecord>> {
  const prefix = recordPrefix(org);
  const entries = await store.list<TargetRecord>(prefix);
  return new Map(entries.map((e) => [e.key.slice(prefix.length), e.value]));
}

export function saveRecord(store: Store, org: string, key: string, record: TargetRecord): Promise<void> {
  return store.set(recordPrefix(org) + key, record);
}

export function forgetRecord(store: Store, org: string, key: string): Promise<void> {
  return store.delete(recordPrefix(org) + key);
}

/**
 * Scopes where a create found a variable Steward did not write (a `createFirst` row): planned from
 * their list from then on, whose conditional re-read costs nothing while it is unchanged, rather
 * than by a refused create and a read on every sync.
 */
function listFirstPrefix(org: string): string {
  return `secrets/list-first/${org.toLowerCase()}/`;
}

export async function loadListFirst(store: Pick<Store, "list">, org: string): Promise<Set<string>> {
  const prefix = listFirstPrefix(org);
  return new Set((await store.list<true>(prefix)).map((e) => e.key.slice(prefix.length)));
}

export function markListFirst(store: Store, org: string, scopeReadKey: string): Promise<void> {
  return store.set(listFirstPrefix(org) + scopeReadKey, true);
}
