import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import Database from "better-sqlite3";
import { openSqliteStore, storeFileName, type SqliteStore } from "../../src/store/sqlite.js";
import { startCheckpointer } from "../../src/store/checkpointer.js";
import { deliveryOf, examplePayload, tempDir } from "./helpers.js";

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("background checkpoints", () => {
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

  it("holds the writer off a moment to start a long WAL over, then lets it go", async () => {
    const db = new Database(join(dir, storeFileName));
    db.pragma("journal_mode = WAL");
    db.pragma("wal_autocheckpoint = 0");
    db.exec("CREATE TABLE t (v TEXT)");
    const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
    db.transaction(() => {
      for (let i = 0; i < 300; i++) insert.run("x".repeat(4000));
    })();
    let released = 0;
    const thread = startCheckpointer({ path: join(dir, storeFileName), synchronous: "NORMAL", restartFrames: 100, tailFrames: 100_000, intervalMs: 5, onFailure: () => undefined });
    try {
      // Nothing writes, so the WAL stays long and the thread holds again every few milliseconds
      // (bounded by time, not by 2000 iterations of about 1 ms each: the thread may be starved meanwhile).
      const giveUpAt = Date.now() + 45_000;
      while (released === 0 && Date.now() < giveUpAt) {
        if (thread.holding()) thread.onRelease(() => released++);
        await sleep(1);
      }
      expect(released).toBeGreaterThan(0);
    } finally {
      thread.stop();
      db.close();
    }
  }, 90_000);

  it("reports a thread that cannot work, so the caller checkpoints itself again", async () => {
    const failure = await new Promise<Error>((resolve) => {
      startCheckpointer({ path: join(dir, "missing", "nested", storeFileName), synchronous: "NORMAL", onFailure: resolve });
    });
    expect(failure.message).toMatch(/open|exited/i);
  });
});
