// The intake spool (src/store/spool.ts): the frame format, frames found in the payload log, and the
// SQLite store's use of them: answered deliveries reach the tables, survive a SIGKILL before their
// move, are moved once, and a moved delivery is never brought back.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { crc32 } from "node:zlib";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import Database from "better-sqlite3";
import { openSqliteStore, payloadDirName, spoolFileName, storeFileName, type SqliteStore } from "../../src/store/sqlite/store.js";
import { INSERT_QUEUED_SQL, SET_MOVED_SEQ_SQL, SqliteDeliveries } from "../../src/store/sqlite/deliveries.js";
import { startStoreThread } from "../../src/store/sqlite/store-thread.js";
import { migrate } from "../../src/store/sqlite/schema.js";
import { PayloadLog, type PayloadRef } from "../../src/store/sqlite/payload-log.js";
import { decodeFrames, encodeFrame, frameHead, framesInLog, framesInRing } from "../../src/store/sqlite/spool.js";
import type { IncomingDelivery } from "../../src/store/records.js";
import { tempDir } from "../engine/helpers.js";
import { runUntilKilled } from "./fixtures/killed.js";


function delivery(id: string, payload = JSON.stringify({ ref: "refs/heads/main", text: "ünïcode ✓" })): IncomingDelivery {
  return {
    id,
    event: "push",
    action: "created",
    installationId: 42,
    repository: "acme/web",
    headers: { "x-github-event": "push", "x-github-delivery": id },
    payload,
    receivedAt: new Date(1_700_000_000_123),
  };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Spooled in a later turn than the last spool write, and in one where no commit is waiting (a move
 * may be, on a busy machine): tries turn after turn, as the intake's next delivery would.
 */
async function spoolOne(d: SqliteDeliveries, incoming: IncomingDelivery): Promise<"recorded" | "duplicate"> {
  for (let turns = 0; turns < 1_000; turns++) {
    await nextTurn();
    const result = d.recordSpooled(incoming);
    if (result) return result;
  }
  throw new Error(`${incoming.id} was never spooled`);
}

/** A frame as the ring file of versions before schema 13 held it: with `ref`, the payload's place in the log instead of the payload. */
function ringFrame(seq: number, d: IncomingDelivery, ref?: PayloadRef): Buffer {
  const meta = { id: d.id, event: d.event, action: d.action, installationId: d.installationId, repository: d.repository, receivedAt: d.receivedAt.getTime(), headers: d.headers, ...(ref ? { ref } : {}) };
  const body = Buffer.from(`${JSON.stringify(meta)}\n${ref ? "" : d.payload}`, "utf8");
  const header = Buffer.alloc(20);
  header.writeUInt32LE(0x31575053, 0);
  header.writeUInt32LE(body.length, 4);
  header.writeBigUInt64LE(BigInt(seq), 8);
  header.writeUInt32LE(crc32(body), 16);
  return Buffer.concat([header, body]);
}

describe("spool: the frames", () => {
  it("reads back every whole frame wherever it lies, in number order, and drops a damaged one", () => {
    const frames = [encodeFrame(3, delivery("c")), encodeFrame(1, delivery("a")), encodeFrame(2, delivery("b", "{\"x\":\"\\n\"}"))];
    const bytes = Buffer.concat([Buffer.from("noise"), frames[0]!, Buffer.alloc(17), frames[1]!, frames[2]!, Buffer.alloc(9)]);
    const read = decodeFrames(bytes);
    expect(read.map((f) => [f.seq, f.delivery.id])).toEqual([[1, "a"], [2, "b"], [3, "c"]]);
    expect(read[0]!.delivery).toEqual(delivery("a"));
    expect(read[1]!.delivery.payload).toBe("{\"x\":\"\\n\"}");
    // One byte of a payload changed: that frame fails its check, the others stand.
    const damaged = Buffer.from(bytes);
    damaged[5 + frames[0]!.length - 3] ^= 0xff;
    expect(decodeFrames(damaged).map((f) => f.delivery.id)).toEqual(["a", "b"]);
    // Cut short: the frame is not whole.
    expect(decodeFrames(bytes.subarray(0, 5 + frames[0]!.length - 1))).toEqual([]);
  });

  it("reads a ring frame of an older version, with its payload or with the payload's place in the log", () => {
    const d = delivery("r", JSON.stringify({ pad: "p".repeat(20_000) }));
    const ref = { file: "host~1~u~s-1.log", offset: 4096, length: 20_012 };
    const [read] = decodeFrames(Buffer.concat([Buffer.alloc(3), ringFrame(7, d, ref)]));
    expect(read).toEqual({ seq: 7, ref, delivery: { ...d, payload: "" } });
    expect(decodeFrames(ringFrame(8, d))[0]).toEqual({ seq: 8, delivery: d });
  });

  it("finds the frames in the payload log from a place on, across its writer's later files, past raw payloads and what is inside a payload", async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const logDir = join(dir, payloadDirName);
      const log = new PayloadLog(logDir, { writable: true, segmentBytes: 9_000 });
      const spooled = (seq: number, payload: string | Buffer) => {
        const bytes = Buffer.from(payload);
        return log.appendMany([bytes], [frameHead(seq, delivery(`d${seq}`, bytes.toString("utf8")), bytes)])[0]!;
      };
      const big = (n: number) => JSON.stringify({ n, text: "ünïcode ✓", pad: "p".repeat(2_500) });
      const first = spooled(1, big(1));
      const from = { file: first.file, offset: first.offset + first.length };
      log.append(big(100)); // committed the usual way: a raw payload, no frame
      // A payload holding a whole frame, byte for byte: only the frame around it is a spooled delivery.
      const holder = Buffer.concat([Buffer.from('{"inner":"'), encodeFrame(99, delivery("inner")), Buffer.from('"}')]);
      const refs = [spooled(2, big(2)), spooled(3, holder), spooled(4, big(4)), spooled(5, big(5))];
      log.close();
      expect(new Set(refs.map((r) => r.file)).size).toBeGreaterThan(1); // the writer rolled: the scan goes on into its later files
      const found = framesInLog(logDir, from);
      expect(found.map((f) => f.seq)).toEqual([2, 3, 4, 5]);
      expect(found.map((f) => f.ref)).toEqual(refs);
      expect(found[0]!.delivery).toEqual({ ...delivery("d2", big(2)), payload: "" });
      const reader = new PayloadLog(logDir, { writable: false });
      expect(reader.read(found[2]!.ref!)).toBe(big(4));
      expect(reader.readBytes(found[1]!.ref!)).toEqual(holder);
      reader.close();
      // From the start: frame 1 too; from a file that is not the log's: nothing.
      expect(framesInLog(logDir, { file: first.file, offset: 0 }).map((f) => f.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(framesInLog(logDir, { file: "elsewhere.log", offset: 0 })).toEqual([]);
    } finally {
      await cleanup();
    }
  });
});

// Moves run on the store's thread in the service (app.ts opens the store with it), on the main connection without it.
describe.each([
  ["moves on the main connection", false],
  ["moves on the store thread", true],
])("spool: the SQLite store, %s", (_, thread) => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let store: SqliteStore | undefined;
  beforeEach(async () => ({ dir, cleanup } = await tempDir()));
  afterEach(async () => {
    await store?.close();
    store = undefined;
    await cleanup();
  });
  const open = () => (store = openSqliteStore(dir, { spool: true, backgroundCheckpoints: thread }));
  const deliveriesOf = (s: SqliteStore) => s.deliveries as SqliteDeliveries;

  it("answers in the same turn, counts it as waiting, and moves it into the tables a moment later, whole", async () => {
    const d = deliveriesOf(open());
    const moved = new Promise<void>((resolve) => d.onMoved(() => resolve()));
    expect(await d.recordSpooled(delivery("one"))).toBe("recorded");
    expect(await d.depth()).toBe(1);
    expect(await d.recordSpooled(delivery("one"))).toBe("duplicate");
    expect(await d.record(delivery("one"))).toBe("duplicate");
    await moved;
    const got = await d.getDelivery("one");
    expect(got?.delivery).toMatchObject({ id: "one", event: "push", action: "created", installationId: 42, repository: "acme/web", status: "queued", payload: delivery("one").payload });
    expect(d.spooled).toBe(0);
    await nextTurn();
    expect(await d.recordSpooled(delivery("one"))).toBe("duplicate"); // in the tables now
    const claim = await d.claimDelivery(60_000);
    expect(claim?.delivery.id).toBe("one");
  });

  it("a delivery stored before a restart, or by a commit, is a duplicate through the spool (the id filter is built from the tables)", async () => {
    let d = deliveriesOf(open());
    expect(await d.record(delivery("committed"))).toBe("recorded");
    expect(await spoolOne(d, delivery("committed"))).toBe("duplicate");
    await store!.close();
    d = deliveriesOf(open());
    expect(d.idsReady).toBe(false); // filled over the next turns; until then every id is looked up
    while (!d.idsReady) await nextTurn();
    expect(await spoolOne(d, delivery("committed"))).toBe("duplicate");
    expect(await spoolOne(d, delivery("new"))).toBe("recorded");
    await nextTurn();
    expect(await spoolOne(d, delivery("new"))).toBe("duplicate");
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    expect(await spoolOne(d, delivery("new"))).toBe("duplicate"); // in the tables now
    expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["committed", "new"]);
  });

  it("writes a turn's spooled deliveries together, in one write, and answers each once it is written", async () => {
    const d = deliveriesOf(open());
    const many = vi.spyOn(PayloadLog.prototype, "appendMany");
    const one = vi.spyOn(PayloadLog.prototype, "append");
    await nextTurn();
    const ids = Array.from({ length: 6 }, (_, i) => `turn-${i}`);
    let answered = 0;
    const results = ids.map((id) => d.recordSpooled(delivery(id, JSON.stringify({ id, pad: "p".repeat(50 + id.length) })))!.then((r) => (answered++, r)));
    // The same id again in the same turn is a duplicate, not a second frame.
    const again = d.recordSpooled(delivery("turn-3"));
    await Promise.resolve();
    expect(answered).toBe(0); // nothing is answered before its frame is written
    expect(await Promise.all(results)).toEqual(ids.map(() => "recorded"));
    expect(await again).toBe("duplicate");
    expect(many).toHaveBeenCalledTimes(1);
    expect(many.mock.calls[0]![0]).toHaveLength(6);
    expect(many.mock.calls[0]![1]).toHaveLength(6); // each payload after its frame's fields
    expect(one).not.toHaveBeenCalled();
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    for (const id of ids) expect((await d.getDelivery(id))?.delivery.payload).toBe(JSON.stringify({ id, pad: "p".repeat(50 + id.length) }));
    many.mockRestore();
    one.mockRestore();
  });

  it("spools beside a commit asked for in the same turn, and beside a worker's deferred writes", async () => {
    const d = deliveriesOf(open());
    expect(await d.record(delivery("queued"))).toBe("recorded");
    const claim = (await d.claimDelivery(60_000))!;
    await nextTurn();
    const finished = d.finishDelivery(claim.token, "queued", { status: "done" });
    const committing = d.record(delivery("asked"));
    expect(await d.recordSpooled(delivery("beside"))).toBe("recorded");
    expect(await committing).toBe("recorded");
    expect(await finished).toBe(true);
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["asked", "beside", "queued"]);
  });

  it("a store without a spool, or at durability power, says so and the caller records as before", async () => {
    store = openSqliteStore(dir, { spool: true, durability: "power" });
    expect(deliveriesOf(store).recordSpooled(delivery("x"))).toBeUndefined();
    await store.close();
    store = openSqliteStore(dir);
    expect(deliveriesOf(store).recordSpooled(delivery("x"))).toBeUndefined();
  });

  it("what is spooled at close is in the tables after it, its turn's write included", async () => {
    const d = deliveriesOf(open());
    for (let i = 0; i < 5; i++) expect(await spoolOne(d, delivery(`c${i}`))).toBe("recorded");
    expect(d.spooled).toBeGreaterThan(0); // the last one at least: its move waits for a timer and a commit
    // Asked for in the turn that closes: written before the last commit, and answered.
    const late = d.recordSpooled(delivery("c5"))!;
    await store!.close();
    expect(await late).toBe("recorded");
    store = openSqliteStore(dir);
    expect((await store.deliveries.listDeliveries()).map((x) => x.id).sort()).toEqual(["c0", "c1", "c2", "c3", "c4", "c5"]);
  });

  it("answered deliveries survive a SIGKILL before their move, are moved once, and recovery reads only the log's new part", async () => {
    const out = await runChild(dir, 40, thread ? "thread" : undefined);
    const unmoved = Number(/SPOOLED (\d+)/.exec(out)?.[1]);
    expect(unmoved).toBeGreaterThan(0); // the SIGKILL came before these were moved
    const d = deliveriesOf(open());
    const listed = await d.listDeliveries();
    expect(listed.map((x) => x.id).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `spooled-${i}`).sort());
    expect(listed.every((x) => x.status === "queued")).toBe(true);
    expect((await d.getDelivery("spooled-39"))?.delivery.payload).toContain("ünïcode spooled-39");
    // The mark now points where this process's log begins, not into the dead one's.
    const mark = new Database(join(dir, storeFileName), { readonly: true }).prepare("SELECT seq, log_file AS file FROM spool_moved").get() as { seq: number; file: string };
    expect(mark.seq).toBe(40);
    expect(readdirSync(join(dir, payloadDirName))).not.toContain(mark.file);
    await store!.close();
    // Opened again: nothing moved twice.
    const again = open();
    expect(await again.deliveries.listDeliveries()).toHaveLength(40);
  });

  it("what a crash left across several files of the payload log is found and moved", async () => {
    const out = await runChild(dir, 30, thread ? "thread,small-segments" : "small-segments");
    expect(Number(/SPOOLED (\d+)/.exec(out)?.[1])).toBeGreaterThan(0);
    expect(readdirSync(join(dir, payloadDirName)).length).toBeGreaterThan(5);
    const d = deliveriesOf(open());
    expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `spooled-${i}`).sort());
    for (const id of ["spooled-0", "spooled-17", "spooled-29"]) expect((await d.getDelivery(id))?.delivery.payload).toContain(`ünïcode ${id}`);
  });

  it("a delivery moved and then pruned is not brought back by the frames a crash left", async () => {
    await runChild(dir, 1, thread ? "thread,moved-then-pruned" : "moved-then-pruned");
    // The pruned delivery's frame is still whole in the log, below the mark.
    const files = readdirSync(join(dir, payloadDirName));
    expect(files.flatMap((f) => framesInLog(join(dir, payloadDirName), { file: f, offset: 0 })).map((f) => f.delivery.id)).toContain("pruned");
    const d = deliveriesOf(open());
    const ids = (await d.listDeliveries()).map((x) => x.id).sort();
    expect(ids).toEqual(["keepme", "spooled-0"]);
  });

  it("a version-12 store and the ring file its crash left: frames above the mark are moved at open, the file goes", async () => {
    // The store as version 12 left it: frame 1 moved (its mark), frames 2 and 3 not; no log place in the mark.
    open();
    await store!.close();
    store = undefined;
    const db = new Database(join(dir, storeFileName));
    db.exec("ALTER TABLE spool_moved DROP COLUMN log_file; ALTER TABLE spool_moved DROP COLUMN log_offset; UPDATE spool_moved SET seq = 1; PRAGMA user_version = 12;");
    db.close();
    writeFileSync(join(dir, spoolFileName), Buffer.concat([ringFrame(1, delivery("old-moved")), Buffer.alloc(40), ringFrame(3, delivery("old-3")), ringFrame(2, delivery("old-2"))]));
    const d = deliveriesOf(open());
    expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["old-2", "old-3"]);
    expect((await d.getDelivery("old-3"))?.delivery.payload).toBe(delivery("old-3").payload);
    expect(existsSync(join(dir, spoolFileName))).toBe(false);
    // Numbering goes on above them.
    expect(await spoolOne(d, delivery("new"))).toBe("recorded");
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    expect(new Database(join(dir, storeFileName), { readonly: true }).prepare("SELECT seq FROM spool_moved").pluck().get()).toBe(4);
  });

  it("a payload log that cannot be written leaves the turn's deliveries to the commit, which fails and says so, and the spool rests", async () => {
    const d = deliveriesOf(open());
    writeFileSync(join(dir, payloadDirName), "a file where the log's folder would be made");
    await nextTurn();
    const both = [d.recordSpooled(delivery("w1")), d.recordSpooled(delivery("w2"))];
    for (const r of both) await expect(r).rejects.toThrow(/EEXIST|ENOTDIR/);
    rmSync(join(dir, payloadDirName));
    await nextTurn();
    expect(d.recordSpooled(delivery("v"))).toBeUndefined(); // resting: not tried on every delivery
    expect(await d.record(delivery("v"))).toBe("recorded");
    expect(await d.record(delivery("w1"))).toBe("recorded"); // the failed one was not taken for stored
    expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["v", "w1"]);
  });

  it("a turn's write that fails is committed delivery by delivery, and each is answered by its commit", async () => {
    const d = deliveriesOf(open());
    const many = vi.spyOn(PayloadLog.prototype, "appendMany").mockImplementationOnce(() => {
      throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    });
    await nextTurn();
    const results = ["f1", "f2", "f3"].map((id) => d.recordSpooled(delivery(id)));
    expect(await Promise.all(results)).toEqual(["recorded", "recorded", "recorded"]);
    expect(d.spooled).toBe(0); // committed, not waiting for a move
    expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["f1", "f2", "f3"]);
    expect((await d.getDelivery("f2"))?.delivery.payload).toBe(delivery("f2").payload);
    many.mockRestore();
  });

  it("a finished file of the log holding deliveries not moved yet is not collected", async () => {
    store = openSqliteStore(dir, { spool: true, backgroundCheckpoints: thread, payloadSegmentBytes: 100 });
    const d = deliveriesOf(store);
    await nextTurn();
    // Each turn's write rolls the log: the first file is finished once the second is written.
    expect(await d.recordSpooled(delivery("first"))).toBe("recorded");
    expect(await d.recordSpooled(delivery("second"))).toBe("recorded");
    expect(d.spooled).toBe(2);
    expect(d.collectPayloads().removed).toBe(0);
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    expect((await d.getDelivery("first"))?.delivery.payload).toBe(delivery("first").payload);
  });

  it("the mark follows the log to each new file while nothing waits for a move, so recovery reads only the newest", async () => {
    store = openSqliteStore(dir, { spool: true, backgroundCheckpoints: thread, payloadSegmentBytes: 100 });
    const d = deliveriesOf(store);
    const markFile = () => new Database(join(dir, storeFileName), { readonly: true }).prepare("SELECT log_file FROM spool_moved").pluck().get() as string;
    expect(await spoolOne(d, delivery("spooled"))).toBe("recorded");
    while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
    // Committed, not spooled (as deliveries arriving together are): each rolls the log.
    for (let i = 0; i < 4; i++) expect(await d.record(delivery(`committed-${i}`, JSON.stringify({ i, pad: "p".repeat(200) })))).toBe("recorded");
    const numbered = (f: string) => Number(/-(\d+)\.log$/.exec(f)![1]);
    const files = readdirSync(join(dir, payloadDirName)).sort((a, b) => numbered(a) - numbered(b));
    expect(files.length).toBeGreaterThanOrEqual(5);
    await vi.waitFor(() => expect(markFile()).toBe(files.at(-1)), { timeout: 20_000, interval: 10 });
    expect(PayloadLog.filesFrom(join(dir, payloadDirName), markFile())).toEqual([files.at(-1)]);
  });

  it("garbage in a ring file or in the payload log is read as no frames", async () => {
    writeFileSync(join(dir, spoolFileName), Buffer.from("SPW1 not a frame SPW1\u0000\u0000"));
    const d = deliveriesOf(open());
    expect(await d.listDeliveries()).toEqual([]);
    await store!.close();
    const mark = new Database(join(dir, storeFileName), { readonly: true }).prepare("SELECT log_file FROM spool_moved").pluck().get() as string;
    mkdirSync(join(dir, payloadDirName), { recursive: true });
    writeFileSync(join(dir, payloadDirName, mark), Buffer.concat([Buffer.from("SPW1"), Buffer.alloc(16, 0xff), Buffer.from("SPW1\u0001\u0000\u0000\u0000garbage")]));
    expect(await deliveriesOf(open()).listDeliveries()).toEqual([]);
  });
});

describe("spool: moves on the store thread", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => ({ dir, cleanup } = await tempDir()));
  afterEach(async () => await cleanup());

  /** The store's parts as sqlite.ts puts them together, with the thread in the test's hands. */
  function parts() {
    const path = join(dir, storeFileName);
    const db = new Database(path);
    db.pragma("journal_mode = WAL");
    migrate(db);
    const thread = startStoreThread({ path, synchronous: "NORMAL", moveSql: { insert: INSERT_QUEUED_SQL, mark: SET_MOVED_SEQ_SQL }, onFailure: () => undefined });
    const d = new SqliteDeliveries(db, new PayloadLog(join(dir, payloadDirName), { writable: true, sync: false }), thread, { ringPath: join(dir, spoolFileName), maxUnmoved: 3 });
    const close = async () => {
      d.markClosed();
      await thread.stop();
      db.close();
    };
    return { db, thread, d, close };
  }

  it("the thread moves a batch, after a commit of the main connection in progress; claims see it once moved", async () => {
    const { db, thread, d, close } = parts();
    try {
      expect(thread.tryEnter()).toBe(true); // as the group commit does around a commit
      expect(await spoolOne(d, delivery("t1"))).toBe("recorded");
      await vi.waitFor(() => expect(thread.holding()).toBe(true), { timeout: 45_000, interval: 5 });
      expect(d.spooled).toBe(1);
      expect(db.prepare("SELECT count(*) FROM deliveries").pluck().get()).toBe(0);
      const moved = new Promise<void>((resolve) => d.onMoved(() => resolve()));
      thread.leave();
      await moved;
      expect(d.spooled).toBe(0);
      expect((await d.claimDelivery(60_000))?.delivery).toMatchObject({ id: "t1", repository: "acme/web", payload: delivery("t1").payload });
      expect(db.prepare("SELECT seq FROM spool_moved").pluck().get()).toBe(1);
    } finally {
      await close();
    }
  });

  it("past its bound of deliveries waiting for a move, the spool leaves the next to a commit", async () => {
    const { thread, d, close } = parts(); // bound: 3
    try {
      expect(thread.tryEnter()).toBe(true); // moves wait on the thread meanwhile
      for (const id of ["b1", "b2", "b3"]) expect(await spoolOne(d, delivery(id))).toBe("recorded");
      await nextTurn();
      expect(d.spooled).toBe(3);
      expect(d.recordSpooled(delivery("b4"))).toBeUndefined();
      thread.leave();
      while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
      expect(await spoolOne(d, delivery("b4"))).toBe("recorded");
    } finally {
      await close();
    }
  });

  it("deliveries arriving together (the intake committed since the last move) are moved by the main connection's group commit", async () => {
    const { db, thread, d, close } = parts();
    try {
      expect(await d.record(delivery("committed"))).toBe("recorded");
      // A commit of ours in progress would keep a move on the thread waiting; the main connection's goes ahead.
      expect(thread.tryEnter()).toBe(true);
      expect(await spoolOne(d, delivery("spooled"))).toBe("recorded");
      await new Promise<void>((resolve) => d.onMoved(() => resolve()));
      expect(thread.holding()).toBe(false);
      thread.leave();
      expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["committed", "spooled"]);
    } finally {
      await close();
    }
  });

  it("deliveries spooled together in one turn are moved by the main connection's group commit; one a turn, by the thread", async () => {
    const { thread, d, close } = parts();
    const onThread = vi.spyOn(thread, "move");
    try {
      await nextTurn();
      // Two in one turn: they arrived together. A commit of ours in progress would keep a move on the thread waiting.
      expect(thread.tryEnter()).toBe(true);
      const both = [d.recordSpooled(delivery("t1")), d.recordSpooled(delivery("t2"))];
      expect(await Promise.all(both)).toEqual(["recorded", "recorded"]);
      await new Promise<void>((resolve) => d.onMoved(() => resolve()));
      thread.leave();
      expect(onThread).not.toHaveBeenCalled();
      // Then one alone: the thread moves it.
      expect(await spoolOne(d, delivery("alone"))).toBe("recorded");
      while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
      expect(onThread).toHaveBeenCalledTimes(1);
      expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["alone", "t1", "t2"]);
    } finally {
      onThread.mockRestore();
      await close();
    }
  });

  it("with the thread gone, the main connection moves what is spooled, and nothing is lost", async () => {
    const { db, thread, d, close } = parts();
    try {
      await thread.stop();
      for (let i = 0; i < 3; i++) expect(await spoolOne(d, delivery(`g${i}`))).toBe("recorded");
      while (d.spooled > 0) await new Promise<void>((resolve) => d.onMoved(() => resolve()));
      expect((await d.listDeliveries()).map((x) => x.id).sort()).toEqual(["g0", "g1", "g2"]);
    } finally {
      await close();
    }
  });
});

function runChild(dir: string, count: number, mode?: string): Promise<string> {
  return runUntilKilled("spool-child.ts", [dir, String(count), ...(mode ? [mode] : [])]);
}
