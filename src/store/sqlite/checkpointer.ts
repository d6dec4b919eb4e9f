// The service's write-ahead log is copied into the database file by a thread of its own, so that
// the copy and its two syncs do not stall the event loop inside a commit (the intake's tail:
// docs/decisions/0017-sqlite-checkpoints-in-a-thread.md). It only checkpoints: every write still
// goes through the service's connection and its group commit. The connection keeps its automatic
// checkpoint as the one that restarts the log, and finds next to nothing left to copy by then.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** How often the thread copies what the log holds beyond the file. */
const CHECKPOINT_EVERY_MS = 100;

// Plain JavaScript run by the thread as is (eval), so it needs no build step of its own.
const THREAD = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma("busy_timeout = 0");
db.pragma("synchronous = " + workerData.synchronous);
const timer = setInterval(() => {
  try {
    // PASSIVE: copies what no reader still needs, never waits for a writer or a reader.
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Busy (the service's own checkpoint holds the lock): the next tick copies it.
  }
}, workerData.everyMs);
parentPort.once("message", () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export class Checkpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;

  /** `failed`: the thread could not run; the connection's own checkpoints go on as before. */
  constructor(path: string, synchronous: "NORMAL" | "FULL", failed: (error: unknown) => void) {
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    this.#worker = new Worker(THREAD, {
      eval: true,
      workerData: { path, driver, synchronous, everyMs: CHECKPOINT_EVERY_MS },
    });
    this.#worker.on("error", failed);
    this.#exited = new Promise((resolve) => this.#worker.once("exit", () => resolve()));
    // The thread never keeps a process alive that has nothing else to do.
    this.#worker.unref();
  }

  /** Stops the thread; resolves once its connection is closed. */
  stop(): Promise<void> {
    // Held from here until the thread is gone: a process with nothing else left to do (a shutdown)
    // must wait for it rather than end with the store's close unsettled.
    this.#worker.ref();
    this.#worker.postMessage("stop");
    return this.#exited;
  }
}
