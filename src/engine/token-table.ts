// Entries by lease token for the worker's own bookkeeping (runs in flight, leases kept): a plain
// object, not a Map. Entries come and go with every run, and a long-lived Map whose entries churn
// kept each run's objects reachable for young collections until a full one, so they were promoted
// out of the young generation; a plain object does not (docs/decisions/0024-getters-made-per-object.md).
export class TokenTable<V> {
  #entries: Record<string, V> = Object.create(null) as Record<string, V>;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(token: string): V | undefined {
    return this.#entries[token];
  }

  set(token: string, value: V): void {
    if (!(token in this.#entries)) this.#size++;
    this.#entries[token] = value;
  }

  delete(token: string): boolean {
    if (!(token in this.#entries)) return false;
    delete this.#entries[token];
    this.#size--;
    return true;
  }

  keys(): string[] {
    return Object.keys(this.#entries);
  }

  values(): V[] {
    return Object.values(this.#entries);
  }

  entries(): [string, V][] {
    return Object.entries(this.#entries);
  }
}
