// Key layout of the Redis store. Every key starts with the prefix; the default prefix is a
// hash tag so all of Steward's keys share one slot. Lua scripts compose per-item keys from
// the prefix the same way (`prefix .. ref`), where a ref is `d:<delivery id>` or `t:<task>`.

export const defaultRedisPrefix = "{steward}:";

/**
 * The hash tag of a key prefix, as Redis Cluster reads it: what lies between the first `{` and
 * the first `}` after it, when not empty. A prefix with one puts every key of the deployment in
 * one slot, so every script and transaction of the store stays on one node.
 */
export function hashTagOf(prefix: string): string | undefined {
  const open = prefix.indexOf("{");
  if (open < 0) return undefined;
  const close = prefix.indexOf("}", open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : undefined;
}

/**
 * A key prefix Steward can use: one with a hash tag, on a standalone Redis as on a cluster (the
 * same layout serves both, and a deployment can move to a cluster as it is).
 */
export function checkRedisPrefix(prefix: string): string {
  if (hashTagOf(prefix) === undefined) {
    const inner = prefix.replace(/[{}]/g, "").replace(/:$/, "") || "steward";
    throw new Error(
      `Redis key prefix ${JSON.stringify(prefix)} has no hash tag: every key of a deployment must hash to one slot ` +
        `(Redis Cluster runs a multi-key step only within one slot); wrap its name in braces, e.g. ${JSON.stringify(`{${inner}}:`)}`,
    );
  }
  return prefix;
}

export class RedisKeys {
  constructor(readonly prefix: string) {
    checkRedisPrefix(prefix);
  }

  // deliveries
  /** The payload's text as received, written with SET NX: the dedup of delivery ids. Its headers are in its state hash. */
  body(id: string): string {
    return `${this.prefix}body:${id}`;
  }
  /** Hash: queue state of one delivery. */
  delivery(id: string): string {
    return `${this.prefix}d:${id}`;
  }
  /** Hash: handler -> JSON outcome record. */
  outcomes(id: string): string {
    return `${this.prefix}o:${id}`;
  }
  /** List: JSON of every handler run (capped), for `deliveries show`. */
  attempts(id: string): string {
    return `${this.prefix}a:${id}`;
  }
  /** Zset of queued and failed-awaiting-retry deliveries by next run time. */
  get due(): string {
    return `${this.prefix}due`;
  }
  /** Zset of running deliveries by lease expiry. */
  get leased(): string {
    return `${this.prefix}leased`;
  }
  /** Zset of every stored delivery by receipt time (listing). */
  get all(): string {
    return `${this.prefix}all`;
  }
  /** Zset of done deliveries by finish time (retention purge). */
  get done(): string {
    return `${this.prefix}done`;
  }
  /** Zset of dead letters by receipt time (the console's dead-letter page, the dead gauge). */
  get dead(): string {
    return `${this.prefix}dead`;
  }
  /** Zsets of deliveries by receipt time per repository and per event (the console's filters). Lua builds the same names. */
  byRepository(fullName: string): string {
    return `${this.prefix}ix:r:${fullName}`;
  }
  byEvent(event: string): string {
    return `${this.prefix}ix:e:${event}`;
  }
  /** Zsets of deliveries by receipt time with a failed outcome: of any handler, of one handler (the console's outcome filter). Lua builds the same names. */
  get failed(): string {
    return `${this.prefix}ix:f`;
  }
  failedBy(handler: string): string {
    return `${this.prefix}ix:f:${handler}`;
  }
  /** Receipt time from which every failed outcome is in the failed zsets (older ones may predate them); absent: not known yet. */
  get failedSince(): string {
    return `${this.prefix}ix:fsince`;
  }

  // tasks
  /** Member naming a task in the task zsets: unambiguous for any handler name and key. */
  taskMember(handler: string, key: string): string {
    return `${handler.length}:${handler}:${key}`;
  }
  task(member: string): string {
    return `${this.prefix}t:${member}`;
  }
  get taskDue(): string {
    return `${this.prefix}tdue`;
  }
  get taskLeased(): string {
    return `${this.prefix}tleased`;
  }
  /** Zset of every task by run time (listing). */
  get tasks(): string {
    return `${this.prefix}tasks`;
  }

  /** Hash: lease token -> ref of the delivery or task it holds. */
  get leases(): string {
    return `${this.prefix}leases`;
  }

  // handler state
  kv(key: string): string {
    return `${this.prefix}kv:${key}`;
  }
  /** Zset (all scores 0) of kv keys in byte order, for prefix listing. */
  get kvIndex(): string {
    return `${this.prefix}kvidx`;
  }
  /** Stream: the audit trail, capped. */
  get audit(): string {
    return `${this.prefix}audit`;
  }

  /** String written by readiness while recording fails (RedisStore.canRecord); expires on its own. */
  get recordProbe(): string {
    return `${this.prefix}record-probe`;
  }
}
