// WAL checkpoints on a worker thread. A checkpoint copies the WAL back into the database file
// and fsyncs both; done by the connection that commits (SQLite's autocheckpoint), it stalled the
// event loop, HTTP intake included, every few thousand pages written: most of the cost of
// recording a delivery. Here a second connection on its own thread checkpoints whenever the WAL
// has grown.
//
// A WAL only starts over from its beginning once it is checkpointed to its very end, which a
// thread copying behind a busy writer never reaches on its own. So when the WAL is long and a
// pass has just left only a short tail, the thread holds the writer off for a moment: it sets a
// shared flag, the service's group commit sees it and lets writes wait (the event loop goes on),
// and the thread checkpoints the tail with RESTART and lifts the flag. The service then never
// copies or fsyncs for a checkpoint itself; if the thread fails, the caller is told and takes
// checkpoints back, so the WAL stays bounded either way.
import { realpathSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { createRequire } from "node:module";

// Plain JavaScript, evaluated as the worker's script: the thread does not inherit tsx's loader.
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const Database = require(workerData.driver);
const flags = new Int32Array(workerData.flags);
const db = new Database(workerData.path);
db.pragma("synchronous = " + workerData.synchronous);
// A checkpoint copies WAL frames to the file without the page cache: the driver's 16 MB default would only ever hold schema pages.
db.pragma("cache_size = 64");
// Bounds a hold: RESTART waits this long at most for a commit in progress or a reader.
db.pragma("busy_timeout = " + workerData.holdTimeoutMs);
let timer;
function checkpoint(mode) {
  try {
    return db.pragma("wal_checkpoint(" + mode + ")")[0];
  } catch (e) {
    // Another connection is checkpointing (SQLITE_BUSY/LOCKED): it does the work; anything else is fatal.
    if (!/SQLITE_(BUSY|LOCKED)/.test(e && e.code)) throw e;
    return undefined;
  }
}
function restart() {
  Atomics.store(flags, 0, 1);
  // A commit that read the flag just before it was set gets its write lock first; RESTART waits for it.
  Atomics.wait(flags, 1, 0, workerData.settleMs);
  try {
    checkpoint("RESTART");
  } finally {
    Atomics.store(flags, 0, 0);
    parentPort.postMessage("released");
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
  if (m !== "stop") return;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
tick();
`;

export interface CheckpointerOptions {
  path: string;
  synchronous: "NORMAL" | "FULL";
  /** How often to look at the WAL when it was short last time. */
  intervalMs?: number;
  /** WAL frames (pages) left behind that make it checkpoint again at once. */
  minFrames?: number;
  /** A WAL this long (frames) is started over as soon as a pass leaves at most `tailFrames` behind. */
  restartFrames?: number;
  tailFrames?: number;
  /** The thread failed: the caller checkpoints itself again. */
  onFailure(error: Error): void;
}

/** What the group commit needs to know: whether to let writes wait, and when they may go. */
export interface CommitGate {
  holding(): boolean;
  onRelease(listener: () => void): void;
}

export interface Checkpointer extends CommitGate {
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

export function startCheckpointer(opts: CheckpointerOptions): Checkpointer {
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
      intervalMs: opts.intervalMs ?? 50,
      minFrames: opts.minFrames ?? 1000,
      restartFrames: opts.restartFrames ?? 24000,
      tailFrames: opts.tailFrames ?? 512,
      settleMs: 2,
      holdTimeoutMs: 200,
    },
  });
  worker.unref();
  let released: (() => void)[] = [];
  const release = () => {
    const listeners = released;
    released = [];
    for (const listener of listeners) listener();
  };
  worker.on("message", (m) => {
    if (m === "released") release();
  });
  let done = false;
  const fail = (error: Error) => {
    if (done) return;
    done = true;
    Atomics.store(flags, 0, 0);
    release();
    opts.onFailure(error);
  };
  worker.on("error", fail);
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  worker.on("exit", (code) => fail(new Error(`checkpoint thread exited with code ${code}`)));
  return {
    holding: () => Atomics.load(flags, 0) === 1,
    onRelease(listener) {
      if (Atomics.load(flags, 0) === 1) released.push(listener);
      else listener();
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
