// Group commit for one SQLite connection: writes asked for in the same turn of the event loop
// share one transaction, so one WAL append (and, at durability "power", one fsync) covers
// intake inserts, handler outcomes and finished deliveries alike. Nothing resolves before the
// commit that makes it durable. Each write still settles on its own: when the shared
// transaction fails, it is rolled back and every write runs again in a transaction of its own,
// so one bad write rejects alone (savepoints per write would cost that on every batch).
import type { Database } from "better-sqlite3";
import { writeTransaction } from "./write-transaction.js";
import type { CommitGate } from "./store-thread.js";

/**
 * How long a deferred write (a worker's outcome or finish) may wait for a commit someone else
 * asks for before it gets one of its own; also how recent the last such ask must be for the
 * write to wait at all.
 */
export const DEFER_MS = 4;

interface Pending {
  write: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  #pending: Pending[] = [];
  #scheduled = false;
  #closed = false;
  #waiting = false;
  #deferTimer: NodeJS.Timeout | undefined;
  /** When a commit was last asked for with `run` (-Infinity: never). */
  #lastAskedAt = Number.NEGATIVE_INFINITY;
  readonly #all: (batch: Pending[]) => unknown[];
  readonly #one: (write: () => unknown) => unknown;
  #beforeTransaction: (() => void) | undefined;

  /**
   * `gate`: while it holds (the store thread moves spooled deliveries in or starts the WAL over), writes wait rather than block.
   * `beforeCommit`: runs inside each transaction after its writes (what they wrote outside SQLite is synced there).
   * `now`: the clock `runDeferred` judges by (tests).
   */
  constructor(
    db: Database,
    private readonly gate?: CommitGate,
    beforeCommit?: () => void,
    private readonly now: () => number = Date.now,
  ) {
    this.#all = writeTransaction(db, (batch: Pending[]) => {
      const results = batch.map((p) => p.write());
      beforeCommit?.();
      return results;
    });
    this.#one = writeTransaction(db, (write: () => unknown) => {
      const result = write();
      beforeCommit?.();
      return result;
    });
  }

  /** Resolves with `write`'s result once the transaction it ran in has committed. */
  run<T>(write: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ write, resolve: resolve as (v: unknown) => void, reject });
      this.#lastAskedAt = this.now();
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.flush());
  }

  /**
   * As `run`, but the write does not ask for a commit of its own at once: it rides along with
   * the next one asked for (an intake insert, usually in a moment while deliveries arrive), or
   * gets its own after DEFER_MS. For writes nobody answers a sender on (a worker's outcome and
   * finish): one commit per delivery instead of two when deliveries arrive one at a time. A crash
   * in between loses only what a crash during the run would (the delivery runs again).
   *
   * It waits only while commits are being asked for (one within DEFER_MS). Otherwise none is
   * likely to come, as when the pool works off a backlog with no deliveries arriving: waiting
   * would hold each worker DEFER_MS for nothing (a backlog drained at a third of its speed), so
   * the write is committed at the end of this turn, with the other writes of the turn.
   */
  runDeferred<T>(write: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ write, resolve: resolve as (v: unknown) => void, reject });
      if (this.#scheduled) return;
      // A timer armed by an earlier deferred write is cleared by the commit (#take).
      if (this.now() - this.#lastAskedAt > DEFER_MS) this.#schedule();
      else if (!this.#deferTimer) {
        this.#deferTimer = setTimeout(() => {
          this.#deferTimer = undefined;
          if (!this.#scheduled) this.flush();
        }, DEFER_MS);
      }
    });
  }

  /**
   * `hook` runs before each transaction, outside it: work the turn's writes share and that need
   * not hold the write lock (their payloads appended in one system call). A write must not count
   * on it having run: when it throws, each write does its own part.
   */
  beforeTransaction(hook: () => void): void {
    this.#beforeTransaction = hook;
  }

  /** Writes waiting for the next commit. */
  get waiting(): number {
    return this.#pending.length;
  }

  /** True while writes wait for the gate: `runNow` would block, so ask with `run` instead. */
  get held(): boolean {
    return this.gate?.holding() ?? false;
  }

  /** Commit whatever is waiting now, or as soon as the gate opens. */
  flush(): void {
    if (this.gate && !this.gate.tryEnter()) {
      if (this.#waiting) return;
      this.#waiting = true;
      this.gate.onRelease(() => {
        this.#waiting = false;
        this.flush();
      });
      return;
    }
    try {
      this.#commit(this.#take());
    } finally {
      this.gate?.leave();
    }
  }

  /**
   * Run `write` now, in one transaction with whatever is waiting (committed early rather than
   * in a commit of its own), and return its result or throw its error. While the gate holds,
   * this blocks until it opens: ask with `run` when `held`.
   */
  runNow<T>(write: () => T): T {
    if (this.#closed) throw new Error("store is closed");
    while (this.gate && !this.gate.tryEnter()) this.gate.waitRelease();
    let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    const own: Pending = {
      write,
      resolve: (value) => (outcome = { ok: true, value: value as T }),
      reject: (error) => (outcome = { ok: false, error }),
    };
    try {
      this.#commit([...this.#take(), own]);
    } finally {
      this.gate?.leave();
    }
    if (!outcome!.ok) throw outcome!.error;
    return outcome!.value;
  }

  #take(): Pending[] {
    const batch = this.#pending;
    this.#pending = [];
    this.#scheduled = false;
    if (this.#deferTimer) clearTimeout(this.#deferTimer);
    this.#deferTimer = undefined;
    return batch;
  }

  #commit(batch: Pending[]): void {
    if (batch.length === 0) return;
    if (this.#closed) {
      for (const p of batch) p.reject(new Error("store is closed"));
      return;
    }
    try {
      this.#beforeTransaction?.();
    } catch {
      // Each write does its part itself, and fails alone if it still cannot.
    }
    let results: unknown[];
    try {
      results = this.#all(batch);
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else for (const p of batch) this.#alone(p);
      return;
    }
    batch.forEach((p, i) => p.resolve(results[i]));
  }

  #alone(p: Pending): void {
    try {
      p.resolve(this.#one(p.write));
    } catch (error) {
      p.reject(error);
    }
  }

  /** Commits what is waiting whatever the gate says (SQLite then waits for the lock if it must). */
  close(): void {
    this.#commit(this.#take());
    this.#closed = true;
  }
}
