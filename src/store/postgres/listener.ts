// The one LISTEN connection of a channel: a connection of its own (a pooled one would drop the
// LISTEN when returned), opened again with a backoff when lost. Notices sent while it was away
// are missed, so whoever relies on it is told when it comes back and looks for itself.
import pg from "pg";
import type { Logger } from "pino";
import { ident } from "./connect.js";

const MAX_RECONNECT_MS = 10_000;

export interface ListenerOptions {
  clientConfig: pg.ClientConfig;
  /** At most 63 bytes (an identifier of PostgreSQL's). */
  channel: string;
  logger: Logger | undefined;
  /** Names the listener in its log lines ("postgres <name> listener lost"). */
  name: string;
  /** A notice's payload. */
  onNotice(payload: string): void;
  /** The connection came back after it was lost: notices may have been missed. */
  onBack(): void;
}

export class Listener {
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #started = false;
  #closed = false;

  constructor(private readonly opts: ListenerOptions) {}

  /** Starts listening (once; later calls do nothing). */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    void this.#listen(0);
  }

  async #listen(failures: number): Promise<void> {
    if (this.#closed) return;
    const { opts } = this;
    const client = new pg.Client(opts.clientConfig);
    this.#client = client;
    let lost = false;
    let connected = false;
    const reconnect = (e?: Error) => {
      if (lost || this.#closed) return;
      lost = true;
      if (e) opts.logger?.warn({ err: { message: e.message } }, `postgres ${opts.name} listener lost; reconnecting`);
      client.end().catch(() => undefined);
      // A connection that worked starts the backoff over.
      const next = connected ? 1 : failures + 1;
      const delay = Math.min(MAX_RECONNECT_MS, 250 * 2 ** (next - 1));
      this.#retry = setTimeout(() => void this.#listen(next), delay);
      this.#retry.unref();
    };
    client.on("error", reconnect);
    client.on("end", () => reconnect());
    client.on("notification", (n) => opts.onNotice(n.payload ?? ""));
    try {
      await client.connect();
      await client.query(`LISTEN ${ident(opts.channel)}`);
    } catch (e) {
      reconnect(e as Error);
      return;
    }
    connected = true;
    if (failures > 0) {
      opts.logger?.info(`postgres ${opts.name} listener back`);
      opts.onBack();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    await this.#client?.end().catch(() => undefined);
  }
}
