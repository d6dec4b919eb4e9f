// Group commit: the writes asked for in one turn of the event loop (deliveries recorded on several
// connections at once, workers' outcomes and finishes) share one transaction, so one commit (and,
// at durability "power", one fsync) covers them all. Nothing resolves before the commit that makes
// it durable. When the shared transaction fails, each write runs again in one of its own, so a bad
// write rejects alone.
import type { Database } from "better-sqlite3";
import { writeTransaction } from "./write-transaction.js";

interface Pending {
  write: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  #pending: Pending[] = [];
  #closed = false;
  readonly #all: (batch: Pending[]) => unknown[];
  readonly #one: (write: () => unknown) => unknown;
  readonly #afterCommit: () => void;

  /** `afterCommit`: told after each shared transaction commits. */
  constructor(db: Database, afterCommit: () => void = () => undefined) {
    this.#afterCommit = afterCommit;
    this.#all = writeTransaction(db, (batch: Pending[]) => batch.map((p) => p.write()));
    this.#one = writeTransaction(db, (write: () => unknown) => write());
  }

  /** Resolves with `write`'s result once the transaction it ran in has committed. */
  run<T>(write: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    return new Promise<T>((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => this.#commit());
      this.#pending.push({ write, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  #commit(): void {
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    let results: unknown[];
    try {
      results = this.#all(batch);
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      for (const p of batch) {
        try {
          p.resolve(this.#one(p.write));
        } catch (alone) {
          p.reject(alone);
        }
      }
      this.#afterCommit();
      return;
    }
    this.#afterCommit();
    batch.forEach((p, i) => p.resolve(results[i]));
  }

  /** Commits what is waiting; later writes are refused. */
  close(): void {
    this.#commit();
    this.#closed = true;
  }
}
