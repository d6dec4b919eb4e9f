// Notices between replicas coordinating on PostgreSQL: a released write slot, a stored token.
// A replica waiting for one of them sleeps until the notice comes (LISTEN/NOTIFY) instead of
// asking the database again and again; notices may be lost (a listener reconnecting, a
// notifier dying), so every wait is also bounded and the waiter then looks for itself.
import type pg from "pg";
import type { Logger } from "pino";
import { Listener } from "../../store/postgres/listener.js";
import { stoppableDelay, throwIfAnyStopped } from "../../lifecycle/abort-scope.js";

export class Notices {
  /** Waiters by the notice they wait for (`slot:<installation>`, `token:<name>`). */
  readonly #waiting = new Map<string, Set<() => void>>();
  readonly #listener: Listener;
  #closed = false;

  constructor(
    private readonly pool: pg.Pool,
    clientConfig: pg.ClientConfig,
    /** At most 63 bytes (an identifier of PostgreSQL's). */
    private readonly channel: string,
    logger: Logger | undefined,
  ) {
    this.#listener = new Listener({
      clientConfig,
      channel,
      logger,
      name: "coordination",
      onNotice: (what) => this.#wake(what),
      // Notices may have been missed: everyone looks again.
      onBack: () => this.#wake(undefined),
    });
    this.#listener.start();
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
      for (const set of this.#waiting.values()) for (const wake of [...set]) wake();
      return;
    }
    for (const wake of [...(this.#waiting.get(what) ?? [])]) wake();
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const set of this.#waiting.values()) for (const wake of [...set]) wake();
    await this.#listener.close();
  }
}
