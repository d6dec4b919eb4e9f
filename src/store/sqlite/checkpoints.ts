// Checkpoints of the write-ahead log, with the database file's sync behind them, off the event loop.
// A checkpoint holds the event loop, and with it every connection's request: part of it is copying
// the log's pages into the database file, part the syncs SQLite does around it
// (docs/decisions/0030-sqlite-checkpoint-synced-behind.md). Here the log is copied in short cycles
// with the connection's sync off, the database file synced on libuv's thread pool after each, and
// only once the log holds its full size is it caught up by SQLite's usual (synced) checkpoint, so
// that it restarts (docs/decisions/0031-sqlite-log-copied-in-short-cycles.md). What keeps that
// safe against power loss:
// - The log is synced before any of its pages is copied (a cycle copies nothing past the reader
//   below, and the sync starts after the reader has begun), so the copied pages are on disk in the
//   log whatever state the database file is left in.
// - The log is not reused until the file is synced: a second connection of this store holds a read
//   transaction begun while the log had frames not yet copied, so it holds a read mark in the log
//   (WAL_READ_LOCK(1..)). SQLite's writer restarts the log only with all those locks exclusive
//   (walRestartLog), without waiting, so until the reader ends it appends; a crash or power loss
//   meanwhile leaves the whole log for the next open to copy again. A cycle's reader ends only after
//   the file's sync; the usual checkpoint syncs the file itself before the log can restart.
// A disk too slow for the writes (the log half as long again as its size while a cycle waits for
// its syncs) gets the syncs on the event loop, so the log stays bounded. At durability "power"
// every checkpoint is the usual one.
import { close, closeSync, fdatasync, fdatasyncSync, openSync } from "node:fs";
import Database from "better-sqlite3";

interface LogState {
  log: number;
  checkpointed: number;
}

/** Frames of the log at which it is copied; see store.ts. */
export interface CheckpointSizes {
  /** Frames not yet copied that start a cycle (copy behind, file synced behind). */
  copy: number;
  /** Frames in the log (copied or not) past which it is caught up by the usual checkpoint, and restarts. */
  restart: number;
  /** At durability "power": frames not yet copied that start the usual checkpoint. */
  usual: number;
}

export class Checkpoints {
  readonly #db: Database.Database;
  readonly #sizes: CheckpointSizes;
  readonly #logState: Database.Statement;
  readonly #checkpoint: Database.Statement;
  /** Absent at durability "power", or when the files cannot be opened: every checkpoint is the usual one. */
  readonly #behind: { reader: Database.Database; dbFd: number; walFd: number } | undefined;
  readonly #begin: Database.Statement | undefined;
  readonly #read: Database.Statement | undefined;
  readonly #end: Database.Statement | undefined;
  /** The reader is held (its snapshot's end: `mark`): pages may be copied and not yet synced. */
  #held: { mark: number; copied: boolean } | undefined;
  /** The database file's sync failed with pages copied: the log stays held for good. */
  #failed = false;
  #syncs = 0;
  #closed = false;
  readonly #onSyncFailed: (error: Error) => void;

  /** `db`: the store's connection, in WAL mode. */
  constructor(
    db: Database.Database,
    path: string,
    sizes: CheckpointSizes,
    syncBehind: boolean,
    onSyncFailed: (error: Error) => void,
  ) {
    this.#db = db;
    this.#onSyncFailed = onSyncFailed;
    this.#sizes = sizes;
    this.#logState = db.prepare("PRAGMA wal_checkpoint(NOOP)");
    this.#checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
    if (!syncBehind) return;
    let reader: Database.Database | undefined;
    let dbFd: number | undefined;
    try {
      reader = new Database(path, { readonly: true, fileMustExist: true });
      reader.pragma("cache_size = 0");
      this.#begin = reader.prepare("BEGIN");
      this.#read = reader.prepare("SELECT 1 FROM sqlite_schema LIMIT 1");
      this.#end = reader.prepare("COMMIT");
      // Closing a descriptor on the database file drops this process's POSIX locks on it, SQLite's
      // included: this one is closed only after the store's connections are (close()).
      dbFd = openSync(path, "r");
      this.#behind = { reader, dbFd, walFd: openSync(`${path}-wal`, "r") };
    } catch {
      reader?.close();
      if (dbFd !== undefined) closeSync(dbFd);
    }
  }

  /** In the turn after a group commit: copies once enough of the log is not yet copied. */
  afterCommit(): void {
    if (this.#closed || this.#failed) return;
    let state = this.#logState.get() as LogState | undefined;
    if (!state) return;
    if (this.#held) {
      // A cycle waits for its syncs. Once the log is half as long again as its size (a disk slow
      // for the writes), they are done here, on the event loop as SQLite does them, so that the
      // log stays bounded.
      if (state.log < this.#sizes.restart + this.#sizes.restart / 2) return;
      this.#finishNow(this.#held);
      if (this.#held) return;
      state = this.#logState.get() as LogState;
    }
    const uncopied = state.log - state.checkpointed;
    if (uncopied === 0) return;
    if (!this.#behind) {
      if (uncopied >= this.#sizes.usual) this.#checkpoint.run();
    } else if (state.log >= this.#sizes.restart) {
      // The catch-up: what came since the last cycle's reader began, with both syncs, and no
      // reader in the way, so the next commit restarts the log. Rare, so that few requests wait on
      // its syncs; a cycle just ended, so it copies little.
      this.#checkpoint.run();
    } else if (uncopied >= this.#sizes.copy) this.#copyBehind();
  }

  #copyBehind(): void {
    const behind = this.#behind!;
    this.#begin!.run();
    let state: LogState;
    try {
      this.#read!.get();
      // Another process may have copied the whole log in between: the reader then holds no read mark.
      state = this.#logState.get() as LogState;
      if (state.checkpointed >= state.log) throw new Error("log copied by another connection");
    } catch {
      this.#end!.run();
      return;
    }
    const held = { mark: state.log, copied: false };
    this.#held = held;
    this.#sync(behind.walFd, (logError) => {
      if (this.#held !== held) return;
      if (logError) return this.#release();
      this.#copy(held);
      this.#sync(behind.dbFd, (fileError) => {
        if (this.#held !== held) return;
        if (fileError) return this.#fail(fileError);
        this.#release();
        // The next cycle, or the catch-up, without waiting for another commit.
        try {
          this.afterCommit();
        } catch {
          // A full disk: the log is copied at a later commit.
        }
      });
    });
  }

  /** The copy: the log's frames up to the reader's mark, with no sync of either file. */
  #copy(held: { copied: boolean }): void {
    held.copied = true;
    try {
      this.#db.pragma("synchronous = OFF");
      this.#checkpoint.run();
    } catch {
      // A full disk: nothing is marked copied; the file's sync after it still covers what was written.
    } finally {
      this.#db.pragma("synchronous = NORMAL");
    }
  }

  /** The copy's syncs, on the event loop; those under way on the pool then change nothing. */
  #finishNow(held: { copied: boolean }): void {
    const behind = this.#behind!;
    if (!held.copied) {
      try {
        fdatasyncSync(behind.walFd);
      } catch {
        return this.#release();
      }
      this.#copy(held);
    }
    try {
      fdatasyncSync(behind.dbFd);
    } catch (error) {
      return this.#fail(error as Error);
    }
    this.#release();
  }

  /** Copied pages may not be on disk, and the copy is marked done: only the log still has them. */
  #fail(error: Error): void {
    this.#failed = true;
    this.#onSyncFailed(error);
  }

  /** fdatasync on libuv's pool; `then` is not called once the store is closed (close() finishes the work). */
  #sync(fd: number, then: (error: Error | null) => void): void {
    this.#syncs++;
    fdatasync(fd, (error) => {
      this.#syncs--;
      if (!this.#closed) then(error);
      else if (this.#syncs === 0) this.#closeFiles();
    });
  }

  #release(): void {
    this.#held = undefined;
    this.#end!.run();
  }

  /** False once the database file could not be synced: the store reports that it cannot record. */
  get healthy(): boolean {
    return !this.#failed;
  }

  /**
   * Before the store's connection closes (it then copies the log, syncs the file and deletes the
   * log): pages copied and not yet synced are synced here first. If that fails, the reader stays
   * open with its read mark, so the store's connection neither copies nor deletes the log, which
   * the next open replays.
   */
  closeReader(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#behind) return;
    if (this.#held && !this.#failed) {
      try {
        fdatasyncSync(this.#behind.dbFd);
        this.#release();
      } catch {
        this.#failed = true;
      }
    }
    if (!this.#failed) this.#behind.reader.close();
  }

  /** After the store's connection has closed. Kept open after a failed sync, with the reader. */
  closeFiles(): void {
    if (this.#behind && this.#syncs === 0) this.#closeFiles();
  }

  #closeFiles(): void {
    if (this.#failed) return;
    close(this.#behind!.walFd, () => undefined);
    close(this.#behind!.dbFd, () => undefined);
  }
}
