// Wake-ups across replicas by LISTEN/NOTIFY: a replica that queues work (a delivery, a task,
// a replay, work given back) notifies; every other replica's pool claims at once instead of at
// its next poll. Notifications carry no data and may be lost (a listener reconnecting), so
// the pool's poll stays as the floor; a replica does not wake itself by its own notices.
// While the replica registry says no other replica is alive, no notice is sent: each one wakes
// every listening connection of the database (this replica's own included) and serializes the
// commits that send it, for no one to hear; a replica starting later claims at its start and
// polls until the others' next heartbeat has seen it.
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Logger } from "pino";
import { Listener } from "./listener.js";

export class WorkSignal {
  readonly #self = randomUUID();
  readonly #listeners: (() => void)[] = [];
  #notifying = false;
  #again = false;
  readonly #listener: Listener;
  #closed = false;
  /** Whether other replicas are alive, as the registry last saw; undefined while not known. */
  #othersAlive: boolean | undefined;

  constructor(
    private readonly pool: pg.Pool,
    clientConfig: pg.ClientConfig,
    /** Channel name (at most 63 bytes, an identifier of PostgreSQL's). */
    private readonly channel: string,
    logger: Logger | undefined,
  ) {
    this.#listener = new Listener({
      clientConfig,
      channel,
      logger,
      name: "wake-up",
      onNotice: (from) => {
        if (from !== this.#self) this.#wake();
      },
      onBack: () => this.#wake(),
    });
  }

  /**
   * Tell other replicas work was queued. One NOTIFY at a time: notices asked for meanwhile
   * are one more after it, so a burst of deliveries costs a few statements, not one each.
   */
  notify(): void {
    if (this.#closed || this.#othersAlive === false) return;
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

  /**
   * pg_notify's arguments, for a statement that queues work and notifies in its own
   * transaction (the notice then leaves with the commit and costs no statement of its own).
   */
  get notice(): [channel: string, from: string] | undefined {
    return this.#othersAlive === false ? undefined : [this.channel, this.#self];
  }

  /**
   * What the replica registry saw at its last heartbeat: other replicas alive or not, or
   * undefined when it does not know (no heartbeat yet, or the last one failed). Notices are
   * sent unless it saw none.
   */
  othersAlive(alive: boolean | undefined): void {
    this.#othersAlive = alive;
  }

  /** `listener` runs when another replica queued work, or the listening connection came back (a notice may have been missed). */
  onWork(listener: () => void): void {
    this.#listeners.push(listener);
    this.#listener.start();
  }

  #wake(): void {
    for (const listener of this.#listeners) listener();
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#listener.close();
  }
}
