// Handler-facing store: idempotency keys, small JSON state and an audit trail. This is
// all a handler's context gets (`handlerStore` in contract.ts, over the store's `kv` part);
// the rest of the store contract (deliveries, tasks, leases) is the framework's.

export interface KeyValue<T = unknown> {
  key: string;
  value: T;
  updatedAt: Date;
}

export interface AuditEntry {
  /** What happened, e.g. `deployment_review`, `secret_write`. */
  kind: string;
  /** Handler or component that recorded it. */
  source: string;
  /** Free-form JSON details. Never a secret value. */
  details: Record<string, unknown>;
  at?: Date;
}

export interface Store {
  /**
   * Atomically claim `key`. Returns true for the first caller (and records the key), false
   * when it was already claimed and not expired. Used for "at most once" side effects.
   */
  claim(key: string, opts?: { ttlMs?: number; value?: unknown }): Promise<boolean>;
  /** Forget a claim (e.g. the side effect failed and may be tried again). */
  release(key: string): Promise<void>;
  /**
   * Compare-and-set, atomically: when `key` holds a live object whose `expect.field` equals
   * `expect.equals`, write `next.value` (expiring after `next.ttlMs`), or delete the key when
   * `next` is undefined; returns whether it did. A lease's renewal and release: never
   * overwrites what another holder wrote after its own lease expired.
   */
  replaceIf(
    key: string,
    expect: { field: string; equals: string },
    next?: { value: unknown; ttlMs?: number },
  ): Promise<boolean>;
  get<T = unknown>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown, opts?: { ttlMs?: number }): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every live entry whose key starts with `prefix`, in key order. */
  list<T = unknown>(prefix: string): Promise<KeyValue<T>[]>;
  audit(entry: AuditEntry): Promise<void>;
  auditLog(filter?: { kind?: string; limit?: number }): Promise<Required<AuditEntry>[]>;
}
