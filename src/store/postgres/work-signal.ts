// Wake-ups across replicas by LISTEN/NOTIFY: a replica that queues work (a delivery, a task,
// a replay, work given back) notifies; every other replica's pool claims at once instead of at
// its next poll. Notifications carry no data and may be lost (a listener reconnecting), so
// the pool's poll stays as the floor; a replica does not wake itself by its own notices.
import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Logger } from "pino";
import { ident } from "./connect.js";

const MAX_RECONNECT_MS = 10_000;

export class WorkSignal {
  readonly #self = randomUUID();
  readonly #listeners: (() => void)[] = [];
  #notifying = false;
  #again = false;
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly clientConfig: pg.ClientConfig,
    /** Channel name (at most 63 bytes, an identifier of PostgreSQL's). */
    private readonly channel: string,
    private readonly logger: Logger | undefined,
  ) {}

  /**
   * Tell other replicas work was queued. One NOTIFY at a time: notices asked for meanwhile
   * are one more after it, so a burst of deliveries costs a few statements, not one each.
   */
  notify(): void {
    if (this.#closed) return;
    if (this.#notifying) {
      this.#again = true;
      return;
    }
    this.#notifying = true;
    this.pool
      .query("SELECT pg_notify($1, $2)", [this.channel, this.#self])
      .catch(() => undefined) // the others' poll finds the work
      .finally(() => {
        this.#notifying = false;
        if (this.#again) {
          this.#again = false;
          this.notify();
        }
      });
  }

  /** `listener` runs when another replica queued work, or the listening connection came back (a notice may have been missed). */
  onWork(listener: () => void): void {
    this.#listeners.push(listener);
    if (this.#listeners.length === 1) void this.#listen(0);
  }

  #wake(): void {
    for (const listener of this.#listeners) listener();
  }

  async #listen(failures: number): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client(this.clientConfig);
    this.#client = client;
    let lost = false;
    const reconnect = (e?: Error) => {
      if (lost || this.#closed) return;
      lost = true;
      if (e) this.logger?.warn({ err: { message: e.message } }, "postgres wake-up listener lost; reconnecting");
      client.end().catch(() => undefined);
      const delay = Math.min(MAX_RECONNECT_MS, 250 * 2 ** failures);
      this.#retry = setTimeout(() => void this.#listen(failures + 1), delay);
      this.#retry.unref();
    };
    client.on("error", reconnect);
    client.on("end", () => reconnect());
    client.on("notification", (n) => {
      if (n.payload !== this.#self) this.#wake();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${ident(this.channel)}`);
    } catch (e) {
      reconnect(e as Error);
      return;
    }
    if (failures > 0) {
      this.logger?.info("postgres wake-up listener back");
      this.#wake();
    }
    // A healthy connection resets the backoff for the next loss.
    failures = 0;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    await this.#client?.end().catch(() => undefined);
  }
}
