// Notices between replicas coordinating on PostgreSQL: a released write slot, a stored token.
// A replica waiting for one of them sleeps until the notice comes (LISTEN/NOTIFY) instead of
// asking the database again and again; notices may be lost (a listener reconnecting, a
// notifier dying), so every wait is also bounded and the waiter then looks for itself.
import pg from "pg";
import type { Logger } from "pino";
import { ident } from "../../store/postgres/connect.js";
import { stoppableDelay, throwIfAnyStopped } from "../../lifecycle/abort-scope.js";

const MAX_RECONNECT_MS = 10_000;

export class Notices {
  /** Waiters by the notice they wait for (`slot:<installation>`, `token:<name>`). */
  readonly #waiting = new Map<string, Set<() => void>>();
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly clientConfig: pg.ClientConfig,
    /** At most 63 bytes (an identifier of PostgreSQL's). */
    private readonly channel: string,
    private readonly logger: Logger | undefined,
  ) {
    void this.#listen(0);
  }

  /** Tell every replica (this one included) that `what` happened. A notice that cannot be sent is left to the waiters' bound. */
  async notify(what: string): Promise<void> {
    if (this.#closed) return;
    await this.pool.query("SELECT pg_notify($1, $2)", [this.channel, what]).catch(() => undefined);
  }

  /**
   * Wait at most `ms` for the notice `what`; resolves early when it comes. Rejects with the
   * stop's error when one of `stops` fires.
   */
  async wait(what: string, ms: number, stops: readonly AbortSignal[]): Promise<void> {
    throwIfAnyStopped(stops);
    const woken = new AbortController();
    const wake = () => woken.abort();
    let set = this.#waiting.get(what);
    if (!set) this.#waiting.set(what, (set = new Set()));
    set.add(wake);
    try {
      await stoppableDelay(ms, [...stops, woken.signal]);
    } catch (e) {
      // Woken by the notice, not stopped.
      if (!woken.signal.aborted || stops.some((s) => s.aborted)) throw e;
    } finally {
      set.delete(wake);
      if (set.size === 0 && this.#waiting.get(what) === set) this.#waiting.delete(what);
    }
  }

  #wake(what: string | undefined): void {
    if (what === undefined) {
      // The listener came back: notices may have been missed, everyone looks again.
      for (const set of this.#waiting.values()) for (const wake of [...set]) wake();
      return;
    }
    for (const wake of [...(this.#waiting.get(what) ?? [])]) wake();
  }

  async #listen(failures: number): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client(this.clientConfig);
    this.#client = client;
    let lost = false;
    let connected = false;
    const reconnect = (e?: Error) => {
      if (lost || this.#closed) return;
      lost = true;
      if (e) this.logger?.warn({ err: { message: e.message } }, "postgres coordination listener lost; reconnecting");
      client.end().catch(() => undefined);
      // A connection that worked starts the backoff over.
      const next = connected ? 1 : failures + 1;
      const delay = Math.min(MAX_RECONNECT_MS, 250 * 2 ** (next - 1));
      this.#retry = setTimeout(() => void this.#listen(next), delay);
      this.#retry.unref();
    };
    client.on("error", reconnect);
    client.on("end", () => reconnect());
    client.on("notification", (n) => this.#wake(n.payload ?? ""));
    try {
      await client.connect();
      await client.query(`LISTEN ${ident(this.channel)}`);
    } catch (e) {
      reconnect(e as Error);
      return;
    }
    connected = true;
    if (failures > 0) {
      this.logger?.info("postgres coordination listener back");
      this.#wake(undefined);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    for (const set of this.#waiting.values()) for (const wake of [...set]) wake();
    await this.#client?.end().catch(() => undefined);
  }
}
