import { closeSync, fdatasyncSync, openSync, readdirSync, readFileSync, statSync, writeSync } from "node:fs";
import { getPriority } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import Database from "better-sqlite3";
import { openSqliteStore, storeFileName, type SqliteStore } from "../../src/store/sqlite/store.js";
import { startStoreThread, THREAD_NICENESS } from "../../src/store/sqlite/store-thread.js";
import { adviseAddonPath } from "../../src/store/sqlite/page-release.js";
import { deliveryOf, examplePayload, tempDir } from "../engine/helpers.js";
import { cachedBytes } from "../support/page-cache.js";

let dir: string;
let cleanup: () => Promise<void>;
let store: SqliteStore | undefined;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  store?.close();
  store = undefined;
  await cleanup();
});

const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the store thread", () => {
  it("copies the WAL into the database file from its own thread", async () => {
    store = openSqliteStore(dir, { backgroundCheckpoints: true });
    const file = join(dir, storeFileName);
    const before = statSync(file).size;
    const payload = examplePayload("workflow_run", "completed");
    await Promise.all(Array.from({ length: 1500 }, () => store!.deliveries.record(deliveryOf("workflow_run", payload))));
    // Only a checkpoint writes pages into the main file; wait for the thread to get to it (the thread
    // shares 2 cores with other work on CI: a bound that fails, not a 10 s loop that falls through).
    await vi.waitFor(() => expect(statSync(file).size).toBeGreaterThan(before + 500_000), { timeout: 45_000, interval: 50 });
    expect(await store.deliveries.depth()).toBe(1500);
  }, 90_000);

  it("holds the writer off to start a long WAL over, after waiting out a commit of the service's in progress", async () => {
    const db = new Database(join(dir, storeFileName));
    db.pragma("journal_mode = WAL");
    db.pragma("wal_autocheckpoint = 0");
    db.exec("CREATE TABLE t (v TEXT)");
    const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
    db.transaction(() => {
      for (let i = 0; i < 300; i++) insert.run("x".repeat(4000));
    })();
    const thread = startStoreThread({ path: join(dir, storeFileName), synchronous: "NORMAL", restartFrames: 100, tailFrames: 100_000, intervalMs: 5, onFailure: () => undefined });
    try {
      // A commit of ours is in progress: the thread, wanting to start the WAL over, raises its hold
      // and waits for us rather than taking the lock under us.
      expect(thread.tryEnter()).toBe(true);
      await vi.waitFor(() => expect(thread.holding()).toBe(true), { timeout: 45_000, interval: 5 });
      await sleep(50);
      expect(thread.holding()).toBe(true); // still waiting for us
      const released = new Promise<void>((resolve) => thread.onRelease(resolve));
      thread.leave();
      await released;
      // Nothing writes, so the WAL stays long and the thread holds again every few milliseconds.
      // Each hold is too short to be caught by looking now and then on a loaded machine; a commit
      // of ours kept open is what the next hold waits for, so it is seen for certain.
      while (!thread.tryEnter()) thread.waitRelease(); // told to wait while a hold is up, let in after
      await vi.waitFor(() => expect(thread.holding()).toBe(true), { timeout: 45_000, interval: 5 });
      const releasedAgain = new Promise<void>((resolve) => thread.onRelease(resolve));
      thread.leave();
      await releasedAgain;
      thread.waitRelease();
      expect(thread.tryEnter()).toBe(true);
      thread.leave();
    } finally {
      await thread.stop();
      db.close();
    }
  }, 120_000);

  it("moves rows and the mark in one transaction, after a commit of the service's in progress", async () => {
    const path = join(dir, storeFileName);
    const db = new Database(path);
    db.pragma("journal_mode = WAL");
    db.exec(`CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER); CREATE TABLE m (id INTEGER PRIMARY KEY, seq INTEGER, file TEXT, at INTEGER);
      CREATE TRIGGER refused BEFORE INSERT ON t WHEN NEW.k = 'refused' BEGIN SELECT RAISE(ABORT, 'refused row'); END`);
    const moveSql = { insert: "INSERT OR IGNORE INTO t (k, v) VALUES (?, ?)", mark: "INSERT INTO m (id, seq, file, at) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = max(seq, excluded.seq), file = excluded.file, at = excluded.at" };
    const thread = startStoreThread({ path, synchronous: "NORMAL", moveSql, onFailure: () => undefined });
    const rows = () => db.prepare("SELECT k, v FROM t ORDER BY k").all();
    const mark = () => db.prepare("SELECT seq FROM m").pluck().get();
    const markAt = () => db.prepare("SELECT file || ':' || at FROM m").pluck().get();
    try {
      expect(thread.tryEnter()).toBe(true);
      let done = false;
      const moved = thread.move([["a", 1], ["b", 2]], 7, "f-1.log", 120).then(() => (done = true));
      await vi.waitFor(() => expect(thread.holding()).toBe(true), { timeout: 45_000, interval: 5 });
      await sleep(50);
      expect(done).toBe(false); // waits for our commit to end
      expect(rows()).toEqual([]);
      thread.leave();
      await moved;
      expect(rows()).toEqual([{ k: "a", v: 1 }, { k: "b", v: 2 }]);
      expect(mark()).toBe(7);
      expect(markAt()).toBe("f-1.log:120");

      // A row the database refuses: nothing of the batch goes in, the mark stays, the caller is told.
      await expect(thread.move([["c", 3], ["refused", 4]], 9, "f-1.log", 300)).rejects.toThrow(/move on the store thread failed: refused row/);
      expect(rows()).toHaveLength(2);
      expect(mark()).toBe(7);
      expect(markAt()).toBe("f-1.log:120");
      // Ids already there are ignored: a batch moved twice is harmless.
      await thread.move([["a", 5], ["c", 3]], 8, "f-2.log", 40);
      expect(rows()).toEqual([{ k: "a", v: 1 }, { k: "b", v: 2 }, { k: "c", v: 3 }]);
      expect(mark()).toBe(8);
      expect(markAt()).toBe("f-2.log:40");
    } finally {
      await thread.stop();
    }
    await expect(thread.move([["z", 1]], 10, "f-2.log", 90)).rejects.toThrow(/not running/);
    expect(rows()).toHaveLength(3);
    db.close();
  }, 120_000);

  it("reports a thread that cannot work, so the caller checkpoints itself again", async () => {
    const failure = await new Promise<Error>((resolve) => {
      startStoreThread({ path: join(dir, "missing", "nested", storeFileName), synchronous: "NORMAL", onFailure: resolve });
    });
    expect(failure.message).toMatch(/open|exited/i);
  });

  /** Each thread of this process and its nice value (/proc/self/task/<tid>/stat, the 19th field). */
  function threadNiceness(): Map<number, number> {
    const out = new Map<number, number>();
    for (const tid of readdirSync("/proc/self/task")) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
        out.set(Number(tid), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]));
      } catch {
        // The thread ended between the listing and the read.
      }
    }
    return out;
  }

  it.runIf(process.platform === "linux")("runs below the event loop's priority, so its work never takes a core from an answer", async () => {
    const own = getPriority();
    const before = threadNiceness();
    const thread = startStoreThread({ path: join(dir, storeFileName), synchronous: "NORMAL", onFailure: () => undefined });
    try {
      // The thread the store started runs lower than the process.
      await vi.waitFor(() => {
        const started = [...threadNiceness()].filter(([tid]) => !before.has(tid));
        expect(started.some(([, n]) => n === Math.min(19, own + THREAD_NICENESS))).toBe(true);
      }, { timeout: 45_000, interval: 20 });
      // The event loop's own thread keeps the process's priority.
      expect(threadNiceness().get(process.pid)).toBe(own);
    } finally {
      await thread.stop();
    }
  }, 60_000);

  it.runIf(process.platform === "linux")("gives page-cache advice on its own descriptor, and says when it cannot (gone, or no addon it can load)", async () => {
    const file = join(dir, "payloads.log");
    const fd = openSync(file, "w");
    writeSync(fd, Buffer.alloc(8 * MB, 0x61));
    fdatasyncSync(fd);
    closeSync(fd);
    expect(cachedBytes(file)).toBeGreaterThan(7 * MB);
    const fadvise = adviseAddonPath();
    expect(fadvise).toBeDefined();
    const thread = startStoreThread({ path: join(dir, storeFileName), synchronous: "NORMAL", fadvise: fadvise!, onFailure: () => undefined });
    try {
      // The first half goes; the rest stays cached (advice covers only the range it names; the
      // kernel may cache in folios of up to 2 MiB and keeps one the range only cuts).
      expect(thread.dontNeed(file, 0, 4 * MB)).toBe(true);
      await vi.waitFor(() => expect(cachedBytes(file)).toBeLessThanOrEqual(4 * MB), { timeout: 45_000, interval: 20 });
      expect(cachedBytes(file)).toBeGreaterThanOrEqual(4 * MB);
      // A file removed before the thread got to it is no error: the thread goes on with its work.
      expect(thread.dontNeed(join(dir, "gone.log"), 0, 4096)).toBe(true);
    } finally {
      await thread.stop();
    }
    // Gone: the caller is told to advise itself.
    expect(thread.dontNeed(file, 0, 4096)).toBe(false);
    const without = startStoreThread({ path: join(dir, storeFileName), synchronous: "NORMAL", onFailure: () => undefined });
    expect(without.dontNeed(file, 0, 4096)).toBe(false);
    await without.stop();
    // Given an addon it cannot load: it says so, and the caller advises itself from then on.
    const broken = startStoreThread({ path: join(dir, storeFileName), synchronous: "NORMAL", fadvise: join(dir, "no-such-addon.node"), onFailure: () => undefined });
    try {
      await vi.waitFor(() => expect(broken.dontNeed(file, 0, 4096)).toBe(false), { timeout: 45_000, interval: 20 });
    } finally {
      await broken.stop();
    }
  }, 60_000);
});
