// The store's own thread: WAL checkpoints, and the spool's moves into the tables, on a second
// connection, so neither stalls the event loop that answers deliveries.
//
// Checkpoints. A checkpoint copies the WAL back into the database file and fsyncs both; done by
// the connection that commits (SQLite's autocheckpoint), it stalled the event loop, HTTP intake
// included, every few thousand pages written: most of the cost of recording a delivery. Here the
// thread checkpoints whenever the WAL has grown. A WAL only starts over from its beginning once it
// is checkpointed to its very end, which a thread copying behind a busy writer never reaches on
// its own. So when the WAL is long and a pass has just left only a short tail, the thread holds
// the writer off for a moment and checkpoints the tail with RESTART. If the thread fails, the
// caller is told and takes checkpoints back, so the WAL stays bounded either way.
//
// Moves. Deliveries answered through the spool (spool.ts) go into the tables in batches; the
// inserts and their commit cost the service's event loop about an eighth of its time while
// deliveries arrive one at a time, on the path of the next one. The thread runs them instead.
//
// Priority. Everything the thread does can wait a little; the event loop's answers cannot. On a
// machine with as many busy threads as cores, each wake of the thread (a move every 50 ms, a checkpoint
// pass once a second) could take a core from the event loop for a scheduler slice, in the
// middle of an answer. The thread lowers its own priority (nice `niceness`, Linux) so the scheduler
// prefers the loop; it still has any core nobody else wants, which is most of the time.
//
// Page-cache advice. The payload log's advice to write back and drop pages behind its writer
// (page-release.ts) waits while the kernel submits the writeback; the thread gives it instead.
//
// Holding the writer off. Both jobs take SQLite's write lock, which the service's group commit
// also takes on every turn. Rather than let either side block in SQLite's busy handler (it sleeps
// a millisecond at least), the two keep out of each other's way through two shared flags: the
// thread raises HOLD, then waits for BUSY to fall; the group commit raises BUSY, then looks at
// HOLD and, if raised, lowers BUSY and waits for the release message while the event loop goes on.
// Each side writes its flag before it reads the other's (sequentially consistent atomics), so at
// most one of them goes ahead.
import { realpathSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { createRequire } from "node:module";

// Plain JavaScript, evaluated as the worker's script: the thread does not inherit tsx's loader.
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const Database = require(workerData.driver);
const flags = new Int32Array(workerData.flags);
const HOLD = 0, BUSY = 1;
const db = new Database(workerData.path);
db.pragma("synchronous = " + workerData.synchronous);
// A checkpoint copies WAL frames to the file without the page cache, and a move touches a few
// index pages a row: the driver's 16 MB default would be memory held for nothing.
db.pragma("cache_size = " + workerData.cachePages);
// Bounds a hold: RESTART waits this long at most for a commit in progress or a reader.
db.pragma("busy_timeout = " + workerData.holdTimeoutMs);
let timer;
// Only this thread: on Linux a thread's id names it alone to setpriority.
try {
  if (workerData.niceness) {
    const os = require("node:os");
    const tid = Number(fs.readlinkSync("/proc/thread-self").split("/").pop());
    os.setPriority(tid, Math.min(19, os.getPriority(tid) + workerData.niceness));
  }
} catch {}
let posixFadvise;
try {
  const addon = workerData.fadvise && require(workerData.fadvise);
  if (addon && !addon.failed_to_load) posixFadvise = addon.posix_fadvise;
} catch {}
// Given the addon and unable to load it: the caller is told, and gives its advice itself.
if (workerData.fadvise && !posixFadvise) parentPort.postMessage("noAdvice");
// On a descriptor of its own, opened by path: the log's may be closed (a roll, a purge) before
// this runs and its number given to another file. A file removed meanwhile needs no advice.
function dontNeed(m) {
  let fd;
  try {
    fd = fs.openSync(m.dontNeed, "r");
  } catch {
    return;
  }
  try {
    posixFadvise(fd, m.offset, m.length, 4);
  } finally {
    fs.closeSync(fd);
  }
}
function checkpoint(mode) {
  try {
    return db.pragma("wal_checkpoint(" + mode + ")")[0];
  } catch (e) {
    // Another connection is checkpointing (SQLITE_BUSY/LOCKED): it does the work; anything else is fatal.
    if (!/SQLITE_(BUSY|LOCKED)/.test(e && e.code)) throw e;
    return undefined;
  }
}
function holding(work) {
  Atomics.store(flags, HOLD, 1);
  // A commit of the service's that began before the hold runs to its end first.
  while (Atomics.load(flags, BUSY) === 1) Atomics.wait(flags, BUSY, 1, 50);
  try {
    return work();
  } finally {
    Atomics.store(flags, HOLD, 0);
    Atomics.notify(flags, HOLD);
    parentPort.postMessage("released");
  }
}
function restart() {
  holding(() => checkpoint("RESTART"));
}
let moveBatch;
function move(m) {
  if (!moveBatch) {
    const insert = db.prepare(workerData.moveSql.insert);
    const mark = db.prepare(workerData.moveSql.mark);
    moveBatch = db.transaction((m) => {
      for (const row of m.rows) insert.run(row);
      mark.run(m.seq, m.file, m.offset);
    });
  }
  // A move waits as long as the service would for a writer of another process (the CLI, say).
  db.pragma("busy_timeout = " + workerData.moveTimeoutMs);
  try {
    holding(() => moveBatch.immediate(m));
    parentPort.postMessage({ moved: m.id });
  } catch (e) {
    parentPort.postMessage({ moveFailed: m.id, message: String((e && e.message) || e) });
  } finally {
    db.pragma("busy_timeout = " + workerData.holdTimeoutMs);
  }
}
// A pass that does not reach the WAL's end (the writer appended meanwhile) leaves the pages it
// copied unsynced; SQLite syncs them all at the next complete checkpoint, which is the one in a
// hold. Flushing them after each pass keeps that sync, and so the hold, short. The descriptor is
// SQLite's own, found through /proc and never closed here: closing any descriptor of the file
// would drop the process's POSIX locks on it. Without /proc, holds are just longer.
function flushCopiedPages() {
  try {
    for (const fd of fs.readdirSync("/proc/self/fd")) {
      if (fs.readlinkSync("/proc/self/fd/" + fd) === workerData.realPath) return fs.fdatasyncSync(Number(fd));
    }
  } catch {}
}
function tick() {
  const r = checkpoint("PASSIVE");
  const behind = r ? r.log - r.checkpointed : 0;
  if (r && r.checkpointed > 0 && behind > 0) flushCopiedPages();
  if (r && r.log >= workerData.restartFrames && behind <= workerData.tailFrames) restart();
  // Still behind (frames were appended meanwhile): go again at once, else look again later.
  timer = setTimeout(tick, behind >= workerData.minFrames ? 0 : workerData.intervalMs);
}
parentPort.on("message", (m) => {
  if (m && typeof m === "object" && "rows" in m) return move(m);
  if (m && typeof m === "object" && "dontNeed" in m) return posixFadvise && dontNeed(m);
  if (m !== "stop") return;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
tick();
`;

export interface StoreThreadOptions {
  path: string;
  synchronous: "NORMAL" | "FULL";
  /** How often to look at the WAL when it was short last time. */
  intervalMs?: number;
  /** WAL frames (pages) left behind that make it checkpoint again at once. */
  minFrames?: number;
  /** A WAL this long (frames) is started over as soon as a pass leaves at most `tailFrames` behind. */
  restartFrames?: number;
  tailFrames?: number;
  /** The statements a move runs: each row's insert (its values as `move` is given them), then the mark (the batch's highest number, and its end in the log). */
  moveSql?: { insert: string; mark: string };
  /** How much lower than the process's the thread's priority is (0-19; default THREAD_NICENESS). */
  niceness?: number;
  /** The page-cache advice addon's path (page-release.ts): the thread gives the payload log's advice. */
  fadvise?: string;
  /** The thread failed: the caller checkpoints itself again, and makes its moves itself. */
  onFailure(error: Error): void;
}

/** What the group commit needs to know: whether to let writes wait, and when they may go. */
export interface CommitGate {
  /** True while the thread holds the writer off. */
  holding(): boolean;
  /**
   * Before a commit: marks one as in progress and true, or false (nothing marked) while the
   * thread holds the writer off. Every true is followed by `leave` once the commit ended.
   */
  tryEnter(): boolean;
  leave(): void;
  /** Blocks until the thread lets go (for a write that cannot wait for `onRelease`): short, a move or a checkpoint's tail. */
  waitRelease(): void;
  onRelease(listener: () => void): void;
}

export interface StoreThread extends CommitGate {
  /**
   * Inserts `rows` and records `seq` as the highest number moved and `file` at `offset` as where
   * its frame ends in the payload log, in one transaction on the thread. Rejects when the thread
   * could not (the rows are then not in the tables, unless a thread that died had committed them
   * first: inserts are to be idempotent) or is gone.
   */
  move(rows: unknown[][], seq: number, file: string, offset: number): Promise<void>;
  /**
   * Advises the kernel, on the thread, that `length` bytes of the file at `path` from `offset` are
   * not needed (written back if dirty, then dropped). False when the thread cannot (not given the
   * addon, or gone): the caller advises itself.
   */
  dontNeed(path: string, offset: number, length: number): boolean;
  /**
   * The thread closes its connection and ends. Resolves once it has (bounded): until then it may
   * still touch the database's files, so a caller removing the data directory must wait.
   */
  stop(): Promise<void>;
}

/** /proc shows descriptors by their resolved path (a relative or symlinked data dir is not). */
function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

const HOLD = 0;
const BUSY = 1;
/** Measured at one connection: 1.06x the rate (median of paired rounds, three runs) against the thread at the loop's priority; +19 let its moves fall behind. */
export const THREAD_NICENESS = 10;

/**
 * How often the thread looks at a WAL that was short last time (a longer one is checkpointed again
 * at once). Each pass copies every page written since the last one and syncs both files: passes
 * every 50 ms copied the tables' and indexes' last pages, rewritten by every commit, twenty times a
 * second. Once a second, the WAL holds about a second of writes between passes.
 */
export const CHECKPOINT_INTERVAL_MS = 1000;

export function startStoreThread(opts: StoreThreadOptions): StoreThread {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const flags = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(workerSource, {
    eval: true,
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 8 },
    workerData: {
      path: opts.path,
      realPath: realPathOf(opts.path),
      driver,
      flags: flags.buffer,
      synchronous: opts.synchronous,
      intervalMs: opts.intervalMs ?? CHECKPOINT_INTERVAL_MS,
      minFrames: opts.minFrames ?? 1000,
      restartFrames: opts.restartFrames ?? 24000,
      tailFrames: opts.tailFrames ?? 512,
      holdTimeoutMs: 200,
      moveTimeoutMs: 5000,
      moveSql: opts.moveSql,
      cachePages: opts.moveSql ? 256 : 64,
      fadvise: opts.fadvise,
      niceness: opts.niceness ?? THREAD_NICENESS,
    },
  });
  worker.unref();
  let released: (() => void)[] = [];
  const release = () => {
    const listeners = released;
    released = [];
    for (const listener of listeners) listener();
  };
  /** Whether the thread gives the advice (it was given the addon and loaded it). */
  let adviceHere = opts.fadvise !== undefined;
  let nextMove = 0;
  const moves = new Map<number, { resolve(): void; reject(error: Error): void }>();
  const settleMoves = (error: Error) => {
    for (const m of moves.values()) m.reject(error);
    moves.clear();
  };
  worker.on("message", (m: unknown) => {
    if (m === "released") return release();
    if (m === "noAdvice") return void (adviceHere = false);
    if (typeof m !== "object" || m === null) return;
    const { moved, moveFailed, message } = m as { moved?: number; moveFailed?: number; message?: string };
    const id = moved ?? moveFailed;
    const waiting = id === undefined ? undefined : moves.get(id);
    if (!waiting) return;
    moves.delete(id!);
    if (moved !== undefined) waiting.resolve();
    else waiting.reject(new Error(`move on the store thread failed: ${message}`));
  });
  let done = false;
  const fail = (error: Error) => {
    if (done) return;
    done = true;
    Atomics.store(flags, HOLD, 0);
    release();
    opts.onFailure(error);
  };
  worker.on("error", fail);
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  worker.on("exit", (code) => {
    Atomics.store(flags, HOLD, 0);
    release();
    // A move asked for and not answered: its rows may or may not be in; the caller moves them again.
    settleMoves(new Error("the store thread ended before it answered"));
    fail(new Error(`store thread exited with code ${code}`));
  });
  const holding = () => Atomics.load(flags, HOLD) === 1;
  return {
    holding,
    tryEnter() {
      Atomics.store(flags, BUSY, 1);
      if (!holding()) return true;
      Atomics.store(flags, BUSY, 0);
      Atomics.notify(flags, BUSY);
      return false;
    },
    leave() {
      Atomics.store(flags, BUSY, 0);
      Atomics.notify(flags, BUSY);
    },
    waitRelease() {
      // A hold lasts one move or one checkpoint's tail; a thread that ended has its flag lowered.
      while (holding()) Atomics.wait(flags, HOLD, 1, 20);
    },
    onRelease(listener) {
      if (holding()) released.push(listener);
      else listener();
    },
    move(rows, seq, file, offset) {
      if (done || !opts.moveSql) return Promise.reject(new Error("the store thread is not running"));
      const id = ++nextMove;
      return new Promise<void>((resolve, reject) => {
        moves.set(id, { resolve, reject });
        worker.postMessage({ id, rows, seq, file, offset });
      });
    },
    dontNeed(path, offset, length) {
      if (done || !adviceHere) return false;
      worker.postMessage({ dontNeed: path, offset, length });
      return true;
    },
    async stop() {
      if (!done) {
        done = true;
        worker.postMessage("stop");
        release();
      }
      // A thread wedged in a checkpoint is terminated rather than waited for without end.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), 5_000)));
      if ((await Promise.race([exited, late])) === "late") await worker.terminate();
      clearTimeout(timer);
    },
  };
}
