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
