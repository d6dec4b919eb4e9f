// Group commit for the PostgreSQL store's writes: what is asked for in one turn of the event
// loop (or in `turns` of them), or while the previous batch is being committed, goes in the next
// batch, one statement and one transaction for the lot, one batch in flight at a time.

export class Batches<T> {
  #waiting: T[] = [];
  /** A batch is being committed, or one is about to start. */
  #busy = false;

  constructor(
    private readonly max: number,
    /** Commits a batch and settles each of its items; never rejects. */
    private readonly commit: (batch: T[]) => Promise<void>,
    /** Runs when the last batch is done and nothing waits. */
    private readonly idle: () => void,
    /** Turns of the event loop a first item waits for others (what they cause may join). */
    private readonly turns: 1 | 2 = 1,
  ) {}

  get busy(): boolean {
    return this.#busy;
  }

  add(item: T): void {
    this.#waiting.push(item);
    if (this.#busy) return;
    this.#busy = true;
    // What is asked for in this turn of the event loop joins the first one.
    setImmediate(() => (this.turns === 1 ? void this.#run() : setImmediate(() => void this.#run())));
  }

  async #run(): Promise<void> {
    while (this.#waiting.length) await this.commit(this.#waiting.splice(0, this.max));
    this.#busy = false;
    this.idle();
  }
}
