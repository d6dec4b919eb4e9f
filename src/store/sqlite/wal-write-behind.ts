// Write-behind of the write-ahead log. At durability "process" (synchronous=NORMAL) a commit
// writes the log without syncing it, so its pages stay dirty in the OS until the checkpoint, which
// syncs the whole log (up to WAL_PAGES_BEFORE_CHECKPOINT pages, tens of MB) inside a commit on the
// event loop, every request waiting behind it. Syncing the log as it is written, off the event loop
// (libuv's thread pool; no SQLite connection, no checkpoint), leaves the checkpoint's own sync
// little to write (docs/decisions/0022-sqlite-log-synced-behind-the-writes.md). It changes no
// commit's durability and nothing SQLite reads: a sync only makes written pages durable sooner.
// A sync that fails is ignored here: the kernel reports a write-back error to every open file
// description, so SQLite's own sync of the log, at the checkpoint, still sees it.
import { close, closeSync, fdatasync, openSync } from "node:fs";

export class WalWriteBehind {
  readonly #fd: number | undefined;
  #syncing = false;
  #closed = false;

  /** `walPath`: the log of a connection already open in WAL mode (so the file exists). */
  constructor(walPath: string) {
    try {
      this.#fd = openSync(walPath, "r");
    } catch {
      // No log to sync (not in WAL mode): commits are durable as SQLite makes them.
      this.#fd = undefined;
    }
  }

  /** After a commit: syncs the log in the background unless a sync is already under way. */
  afterCommit(): void {
    if (this.#fd === undefined || this.#syncing || this.#closed) return;
    this.#syncing = true;
    const fd = this.#fd;
    fdatasync(fd, () => {
      this.#syncing = false;
      if (this.#closed) close(fd, () => undefined);
    });
  }

  /** Later commits are not followed; the file is closed once a sync under way ends. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#fd !== undefined && !this.#syncing) closeSync(this.#fd);
  }
}
