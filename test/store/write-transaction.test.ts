// Writes on the service's connection while another connection commits at the same time: the CLI
// in another process. A transaction that
// reads before it writes starts as a reader, and SQLite refuses its upgrade to a writer at once
// (SQLITE_BUSY, "database is locked", no busy wait) when another connection committed since its
// read. Every read-then-write path of the store must take the write lock first and wait its turn.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/store.js";
import { withStoreLock } from "../../src/coordination/lock.js";

const driver = createRequire(import.meta.url).resolve("better-sqlite3");

// Commits one row at a time into a table of its own until told to stop; counts its commits.
const writerSource = `
const { workerData, parentPort } = require("node:worker_threads");
const Database = require(workerData.driver);
const flags = new Int32Array(workerData.flags);
const db = new Database(workerData.path);
db.pragma("busy_timeout = 5000");
db.exec("CREATE TABLE IF NOT EXISTS other_writer (n INTEGER)");
const insert = db.prepare("INSERT INTO other_writer (n) VALUES (?)");
let n = 0;
parentPort.postMessage("writing");
while (Atomics.load(flags, 0) === 0) { insert.run(++n); Atomics.store(flags, 1, n); }
db.close();
parentPort.postMessage("stopped");
`;

interface OtherWriter {
  commits(): number;
  stop(): Promise<void>;
}

async function startOtherWriter(path: string): Promise<OtherWriter> {
  const flags = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(writerSource, { eval: true, workerData: { path, driver, flags: flags.buffer } });
  const messages: string[] = [];
  let heard: (() => void) | undefined;
  worker.on("message", (m: string) => {
    messages.push(m);
    heard?.();
  });
  const hear = (m: string) =>
    new Promise<void>((resolve, reject) => {
      worker.once("error", reject);
      const look = () => (messages.includes(m) ? resolve() : (heard = look));
      look();
    });
  await hear("writing");
  return {
    commits: () => Atomics.load(flags, 1),
    async stop() {
      Atomics.store(flags, 0, 1);
      await hear("stopped");
      await worker.terminate();
    },
  };
}

let dir: string;
let store: SqliteStore;
let other: OtherWriter | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "steward-writers-"));
  store = openSqliteStore(dir);
});

afterEach(async () => {
  await other?.stop();
  other = undefined;
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `op` `times` times while the other connection commits throughout; every run must succeed. */
async function underOtherWriter(times: number, op: (i: number) => Promise<unknown>): Promise<void> {
  other = await startOtherWriter(store.path);
  const before = await committedSince(other, other.commits());
  for (let i = 0; i < times; i++) await op(i);
  // The other connection was committing when the operations began and is committing still: it
  // wrote beside them throughout rather than having stopped (on a busy machine a thread may not
  // run during a short operation, so this waits for its next commit rather than demanding one).
  await committedSince(other, before);
}

/** Waits, however long the machine takes, for `writer` to commit past `count`; its count then. */
async function committedSince(writer: OtherWriter, count: number): Promise<number> {
  while (writer.commits() <= count) await new Promise((r) => setTimeout(r, 1));
  return writer.commits();
}

describe("store writes while another connection commits", () => {
  it("kv claim and compare-and-replace", async () => {
    await underOtherWriter(3000, async (i) => {
      expect(await store.kv.claim(`lock:${i}`, { value: { token: `t${i}` }, ttlMs: 60_000 })).toBe(true);
      expect(await store.kv.replaceIf(`lock:${i}`, { field: "token", equals: `t${i}` })).toBe(true);
    });
  });

  it("a store lock taken and released, as handlers use it", async () => {
    let ran = 0;
    await underOtherWriter(2000, () => withStoreLock(store.kv, "history:lock", async () => void ran++));
    expect(ran).toBe(2000);
    expect(await store.kv.get("history:lock")).toBeUndefined();
  });

  it("tasks scheduled and scheduled again", async () => {
    await underOtherWriter(2000, (i) =>
      store.tasks.scheduleTask("rerun", {
        key: `k${i % 50}`,
        runAt: new Date(Date.now() + 60_000),
        data: { i },
        replace: true,
      }),
    );
    const due = await store.tasks.claimTask(1000);
    expect(due).toBeUndefined();
  });

  it("deliveries replayed and purged", async () => {
    const receivedAt = new Date(Date.now() - 60_000);
    for (let i = 0; i < 200; i++) {
      await store.deliveries.record({
        id: `d${i}`,
        event: "ping",
        action: undefined,
        installationId: undefined,
        repository: undefined,
        headers: {},
        payload: "{}",
        receivedAt,
      });
    }
    // Finish them all, so replay has something to requeue and the purge something to remove.
    for (const claim of await store.deliveries.claimDeliveries(60_000, 200))
      await store.deliveries.finishDelivery(claim.token, claim.delivery.id, { status: "done" });
    await underOtherWriter(200, async (i) => expect(await store.deliveries.replayDelivery(`d${i}`)).toBe(true));
    for (const claim of await store.deliveries.claimDeliveries(60_000, 200))
      await store.deliveries.finishDelivery(claim.token, claim.delivery.id, { status: "done" });
    await other!.stop();
    other = undefined;
    await underOtherWriter(1, async () => expect(await store.deliveries.purgeFinished(new Date())).toBe(200));
  });
});

describe("transactions of the store", () => {
  it("are begun through writeTransaction (IMMEDIATE), never as DEFERRED ones", async () => {
    const { readdirSync, readFileSync } = await import("node:fs");
    const root = join(import.meta.dirname, "../../src");
    const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    const deferred = files.filter((f) => {
      const text = readFileSync(join(root, f), "utf8");
      const own = f.endsWith("write-transaction.ts") ? 1 : 0;
      return (text.match(/\.transaction\(/g) ?? []).length > own;
    });
    expect(deferred).toEqual([]);
  });
});
