// The payload log (src/store/payload-log.ts) under the SQLite store: payloads are written once,
// outside SQLite, read back whole by every reader, survive a SIGKILL, and the files go when no
// delivery needs them (sparse ones compacted first), never a file a live process writes.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, truncateSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openSqliteStore, payloadDirName, type SqliteStore } from "../../src/store/sqlite/store.js";
import type { SqliteDeliveries } from "../../src/store/sqlite/deliveries.js";
import { PayloadLog } from "../../src/store/sqlite/payload-log.js";
import { PageRelease } from "../../src/store/sqlite/page-release.js";
import type { IncomingDelivery } from "../../src/store/records.js";
import { tempDir } from "../engine/helpers.js";
import { runUntilKilled } from "./fixtures/killed.js";


function delivery(id: string, size = 3000): IncomingDelivery {
  return {
    id,
    event: "push",
    action: undefined,
    installationId: 42,
    repository: "acme/web",
    headers: { "x-github-event": "push", "x-github-delivery": id },
    payload: JSON.stringify({ ref: "refs/heads/main", text: `ünïcode ✓ ${id}`, padding: "p".repeat(size) }),
    receivedAt: new Date(1_700_000_000_123),
  };
}

let dir: string;
let cleanup: () => Promise<void>;
let open: SqliteStore[] = [];
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  open = [];
});
afterEach(async () => {
  for (const s of open) await s.close();
  await cleanup();
});

function store(opts: Parameters<typeof openSqliteStore>[1] = {}): SqliteStore {
  const s = openSqliteStore(dir, opts);
  open.push(s);
  return s;
}
const files = () => (existsSync(join(dir, payloadDirName)) ? readdirSync(join(dir, payloadDirName)).sort() : []);
function bodyRows(s: SqliteStore) {
  const db = new Database(s.path, { readonly: true });
  try {
    // A body is in its queue row (schema 10 on) or in delivery_bodies (inline, or older rows).
    return db
      .prepare(
        `SELECT id, '' AS payload, payload_file, payload_offset, payload_length FROM deliveries WHERE headers IS NOT NULL
         UNION ALL SELECT id, payload, payload_file, payload_offset, payload_length FROM delivery_bodies ORDER BY id`,
      )
      .all() as {
      id: string;
      payload: string;
      payload_file: string | null;
      payload_offset: number | null;
      payload_length: number | null;
    }[];
  } finally {
    db.close();
  }
}

/** Claims everything due and finishes it done, except the ids in `keep` (left running). */
async function finishAll(s: SqliteStore, keep: Set<string> = new Set()): Promise<void> {
  for (;;) {
    const claims = await s.deliveries.claimDeliveries(60_000, 50);
    if (claims.length === 0) return;
    for (const c of claims) if (!keep.has(c.delivery.id)) await s.deliveries.finishDelivery(c.token, c.delivery.id, { status: "done" });
  }
}

function runChild(count: number, durability: "process" | "power"): Promise<string> {
  return runUntilKilled("payload-log-child.ts", [dir, String(count), durability]);
}

describe("payload log", () => {
  it("writes a payload once, outside SQLite, and claim, show and list read it back whole", async () => {
    const s = store();
    const sent = [delivery("a"), delivery("b", 20_000), delivery("c", 10)];
    for (const d of sent) expect(await s.deliveries.record(d)).toBe("recorded");
    const rows = bodyRows(s);
    expect(rows.map((r) => [r.id, r.payload, r.payload_length])).toEqual(sent.map((d) => [d.id, "", Buffer.byteLength(d.payload)]));
    expect(new Set(rows.map((r) => r.payload_file)).size).toBe(1);
    expect(files()).toEqual([rows[0]!.payload_file]);

    const claimed = await s.deliveries.claimDeliveries(60_000, 10);
    expect(Object.fromEntries(claimed.map((c) => [c.delivery.id, c.delivery.payload]))).toEqual(Object.fromEntries(sent.map((d) => [d.id, d.payload])));
    expect((await s.deliveries.getDelivery("b"))!.delivery.payload).toBe(sent[1]!.payload);
    const listed = await s.deliveries.listDeliveries({ limit: 10 });
    expect(listed.map((d) => d.payload).sort()).toEqual(sent.map((d) => d.payload).sort());
  });

  it("appends the payloads of deliveries recorded in one turn in one write, each where its row says", async () => {
    const s = store();
    const deliveries = s.deliveries as SqliteDeliveries;
    const many = vi.spyOn(PayloadLog.prototype, "appendMany");
    const one = vi.spyOn(PayloadLog.prototype, "append");
    try {
      const ids = Array.from({ length: 20 }, (_, i) => `turn-${i}`);
      // One a turn before, so the log's first file exists and the twenty are one write on their own.
      await deliveries.record(delivery("before"));
      many.mockClear();
      one.mockClear();
      // Two of them again in the same turn: a duplicate's bytes are written too, and left unreferenced.
      const results = await Promise.all([...ids, "turn-3", "before"].map((id, i) => deliveries.record(delivery(id, 1000 + i * 37))));
      expect(results).toEqual([...ids.map(() => "recorded"), "duplicate", "duplicate"]);
      expect(many).toHaveBeenCalledTimes(1);
      expect(many.mock.calls[0]![0]).toHaveLength(22);
      expect(one).not.toHaveBeenCalled();
      const rows = bodyRows(s).filter((r) => r.id.startsWith("turn-"));
      expect(rows).toHaveLength(20);
      const byId = new Map(rows.map((r) => [r.id, r]));
      // In the order they were recorded, back to back in one file.
      const refs = ids.map((id) => byId.get(id)!);
      expect(new Set(refs.map((r) => r.payload_file)).size).toBe(1);
      for (let i = 1; i < refs.length; i++) expect(refs[i]!.payload_offset).toBe(refs[i - 1]!.payload_offset! + refs[i - 1]!.payload_length!);
      for (const id of ids) expect((await s.deliveries.getDelivery(id))?.delivery.payload).toBe(delivery(id, 1000 + ids.indexOf(id) * 37).payload);
    } finally {
      many.mockRestore();
      one.mockRestore();
    }
  });

  it("a turn whose one write fails is written payload by payload, and a payload that cannot be written fails only its delivery", async () => {
    const s = store();
    const deliveries = s.deliveries as SqliteDeliveries;
    const append = PayloadLog.prototype.append;
    const many = vi.spyOn(PayloadLog.prototype, "appendMany").mockImplementation(() => {
      throw new Error("ENOSPC: no space left on device");
    });
    const one = vi.spyOn(PayloadLog.prototype, "append").mockImplementation(function (this: PayloadLog, payload) {
      if (String(payload).includes("refused-payload")) throw new Error("ENOSPC: no space left on device");
      return append.call(this, payload);
    });
    try {
      const results = await Promise.allSettled(["a", "b", "refused-payload", "c"].map((id) => deliveries.record(delivery(id))));
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
      expect(one).toHaveBeenCalled();
      for (const id of ["a", "b", "c"]) expect((await s.deliveries.getDelivery(id))?.delivery.payload).toBe(delivery(id).payload);
      expect(await s.deliveries.getDelivery("refused-payload")).toBeUndefined();
    } finally {
      many.mockRestore();
      one.mockRestore();
    }
  });

  it("reads a claimed delivery's payload from the log only when something reads it, and does not keep the text", async () => {
    const s = store();
    await s.deliveries.record(delivery("lazy"));
    const read = vi.spyOn(PayloadLog.prototype, "readBytes");
    try {
      const [claim] = await s.deliveries.claimDeliveries(60_000, 1);
      expect(claim!.delivery.id).toBe("lazy");
      expect(read).not.toHaveBeenCalled();
      expect(JSON.parse(claim!.delivery.payload).text).toBe("ünïcode ✓ lazy");
      expect(read).toHaveBeenCalledTimes(1);
      // Read again when asked again: a 2-25 KB string kept for a run's length outlives collections.
      expect(claim!.delivery.payload).toBe(delivery("lazy").payload);
      expect(read).toHaveBeenCalledTimes(2);
      // A copy of the record carries the text, as any other field, and keeps it.
      const copy = { ...claim!.delivery };
      expect(read).toHaveBeenCalledTimes(3);
      expect(copy.payload).toBe(delivery("lazy").payload);
      expect(read).toHaveBeenCalledTimes(3);
    } finally {
      read.mockRestore();
    }
  });

  it("holds the log's cached pages from the payload of the delivery the pool claims next", async () => {
    const holds: (() => { file: string; offset: number } | undefined)[] = [];
    const spy = vi.spyOn(PageRelease.prototype, "holdFrom").mockImplementation(function (this: PageRelease, from) {
      holds.push(from);
    });
    try {
      const s = store();
      const hold = holds.at(-1)!;
      expect(hold()).toBeUndefined();
      for (const id of ["first", "second", "third"]) await s.deliveries.record(delivery(id));
      const place = (id: string) => {
        const row = bodyRows(s).find((r) => r.id === id)!;
        return { file: row.payload_file!, offset: row.payload_offset! };
      };
      expect(hold()).toEqual(place("first"));
      const [claim] = await s.deliveries.claimDeliveries(60_000, 1);
      expect(claim!.delivery.id).toBe("first");
      expect(hold()).toEqual(place("second"));
      await s.deliveries.claimDeliveries(60_000, 2);
      expect(hold()).toBeUndefined();
    } finally {
      spy.mockRestore();
    }
  });

  it("reads the payloads a store kept in SQLite (before the log, or with it off) beside the log's", async () => {
    const inline = store({ payloadLog: false });
    await inline.deliveries.record(delivery("old"));
    expect(bodyRows(inline)[0]).toMatchObject({ id: "old", payload_file: null, payload: delivery("old").payload });
    await inline.close();
    const s = store();
    await s.deliveries.record(delivery("new"));
    expect((await s.deliveries.getDelivery("old"))!.delivery.payload).toBe(delivery("old").payload);
    expect((await s.deliveries.getDelivery("new"))!.delivery.payload).toBe(delivery("new").payload);
    const claimed = await s.deliveries.claimDeliveries(60_000, 10);
    expect(claimed.map((c) => c.delivery.payload).sort()).toEqual([delivery("new").payload, delivery("old").payload].sort());
  });

  for (const durability of ["process", "power"] as const) {
    it(`keeps every answered delivery's payload whole through a SIGKILL, across several files (durability ${durability})`, async () => {
      expect(await runChild(60, durability)).toContain("RECORDED 60");
      expect(files().length).toBeGreaterThan(1);
      const s = store({ durability });
      for (let i = 0; i < 60; i++) {
        const id = `killed-${i}`;
        const got = await s.deliveries.getDelivery(id);
        expect(JSON.parse(got!.delivery.payload)).toEqual({ ref: "refs/heads/main", note: `ünïcode ${id}`, padding: "x".repeat(1000 + i * 37) });
      }
      // The dead writer's files are finished: once its deliveries are done and purged, they go.
      await finishAll(s);
      await s.deliveries.purgeFinished(new Date(Date.now() + 60_000));
      expect(files()).toEqual([]);
    });
  }

  it("rolls to a new file at the segment size; once their deliveries are purged the finished files go, the file in use stays", async () => {
    const s = store({ payloadSegmentBytes: 16 * 1024 });
    for (let i = 0; i < 30; i++) await s.deliveries.record(delivery(`d-${String(i).padStart(2, "0")}`));
    const before = files();
    expect(before.length).toBeGreaterThanOrEqual(5);
    for (let i = 0; i < 30; i++) expect((await s.deliveries.getDelivery(`d-${String(i).padStart(2, "0")}`))!.delivery.payload).toBe(delivery(`d-${String(i).padStart(2, "0")}`).payload);
    const inUse = bodyRows(s).find((r) => r.id === "d-29")!.payload_file;
    await finishAll(s);
    expect(await s.deliveries.purgeFinished(new Date(Date.now() + 60_000))).toBe(30);
    expect(files()).toEqual([inUse]);
  });

  it("copies the few live payloads out of a mostly purged file and removes it; they read back the same, and a mostly live file stays", async () => {
    const s = store({ payloadSegmentBytes: 64 * 1024 });
    const ids = Array.from({ length: 40 }, (_, i) => `d-${String(i).padStart(2, "0")}`);
    for (const id of ids) await s.deliveries.record(delivery(id));
    const [first, second] = files();
    const fileOf = () => new Map(bodyRows(s).map((r) => [r.id, r.payload_file]));
    const inFirst = ids.filter((id) => fileOf().get(id) === first);
    const inSecond = ids.filter((id) => fileOf().get(id) === second);
    expect(inFirst.length).toBeGreaterThan(10);
    // The first file keeps two live deliveries (sparse), the second keeps all but one (not sparse).
    const keep = new Set([inFirst[0]!, inFirst[5]!, ...inSecond.slice(1)]);
    await finishAll(s, keep);
    await s.deliveries.purgeFinished(new Date(Date.now() + 60_000));
    expect(files()).not.toContain(first);
    const now = fileOf();
    for (const id of keep) {
      expect(now.get(id)).not.toBe(first);
      expect((await s.deliveries.getDelivery(id))!.delivery.payload).toBe(delivery(id).payload);
    }
    if (files().includes(second!)) expect(inSecond.slice(1).every((id) => now.get(id) === second)).toBe(true);
    expect((s.deliveries as SqliteDeliveries).collectPayloads()).toEqual({ removed: 0, moved: 0, kept: 0 });
  });

  it("leaves a sparse file it cannot read whole where it is, rows unchanged, and collects the others", async () => {
    const s = store({ payloadSegmentBytes: 16 * 1024 });
    const ids = Array.from({ length: 20 }, (_, i) => `d-${String(i).padStart(2, "0")}`);
    for (const id of ids) await s.deliveries.record(delivery(id));
    const rows = bodyRows(s);
    const [first, second] = files();
    const keepFirst = rows.find((r) => r.payload_file === first)!;
    const keepSecond = rows.find((r) => r.payload_file === second)!;
    await finishAll(s, new Set([keepFirst.id, keepSecond.id]));
    // The first file loses its tail (the kept payload's last byte), as a disk cleaned by hand might.
    truncateSync(join(dir, payloadDirName, first!), keepFirst.payload_offset! + keepFirst.payload_length! - 1);
    await s.deliveries.purgeFinished(new Date(Date.now() + 60_000));
    expect(files()).toContain(first);
    expect(files()).not.toContain(second);
    const after = new Map(bodyRows(s).map((r) => [r.id, r.payload_file]));
    expect(after.get(keepFirst.id)).toBe(first);
    expect(after.get(keepSecond.id)).not.toBe(second);
    expect((await s.deliveries.getDelivery(keepSecond.id))!.delivery.payload).toBe(delivery(keepSecond.id).payload);
  });

  it("collects an unreferenced file of a process that is gone and never one of a live process", async () => {
    const s = store();
    await s.deliveries.record(delivery("mine"));
    const gonePid = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ["-e", "0"]);
      child.on("exit", () => resolve(child.pid!));
    });
    const payloads = join(dir, payloadDirName);
    mkdirSync(payloads, { recursive: true });
    const gone = `${hostname()}~${gonePid}~${randomUUID()}~1.log`;
    const live = `${hostname()}~${process.ppid}~${randomUUID()}~1.log`;
    const otherHost = `elsewhere.example~${gonePid}~${randomUUID()}~1.log`;
    for (const f of [gone, live, otherHost, "notes.txt"]) writeFileSync(join(payloads, f), "{}");
    expect((s.deliveries as SqliteDeliveries).collectPayloads()).toEqual({ removed: 1, moved: 0, kept: 0 });
    expect(files()).not.toContain(gone);
    expect(files()).toEqual(expect.arrayContaining([live, otherHost, "notes.txt"]));
    expect((await s.deliveries.getDelivery("mine"))!.delivery.payload).toBe(delivery("mine").payload);
  });

  it("never opens a file a body row names outside the log's own", () => {
    writeFileSync(join(dir, "secret.txt"), "not a payload");
    const log = new PayloadLog(join(dir, payloadDirName), { writable: false });
    expect(log.read({ file: "../secret.txt", offset: 0, length: 5 })).toBeUndefined();
    expect(log.read({ file: `../${hostname()}~1~x~1.log`, offset: 0, length: 5 })).toBeUndefined();
    expect(() => log.append("{}")).toThrow(/only reads/);
  });

  it("a payload whose file was removed reads as empty (its run then fails as not JSON) without failing other claims", async () => {
    // Under one payload: each delivery in its own file.
    const s = store({ payloadSegmentBytes: 1024 });
    await s.deliveries.record(delivery("lost"));
    await s.deliveries.record(delivery("kept"));
    const lostFile = bodyRows(s).find((r) => r.id === "lost")!.payload_file!;
    // Removed by hand, as an operator cleaning the disk might (its own descriptor is closed first).
    (s.deliveries as unknown as { payloads: PayloadLog }).payloads.remove(lostFile);
    const claimed = await s.deliveries.claimDeliveries(60_000, 10);
    expect(Object.fromEntries(claimed.map((c) => [c.delivery.id, c.delivery.payload]))).toEqual({ lost: "", kept: delivery("kept").payload });
  });
});

describe("payload log: the file filled ahead of the writer", () => {
  it("puts a turn's payloads written together back to back, whole, past a running fill and across rolls", async () => {
    const log = new PayloadLog(join(dir, payloadDirName), { writable: true, segmentBytes: 4 * 1024 * 1024 });
    try {
      const written: { ref: ReturnType<PayloadLog["append"]>; bytes: Buffer }[] = [];
      for (let turn = 0; turn < 60; turn++) {
        // A turn of 1-40 payloads of 2-30 KB; every fifth turn waits for the fills, the others overtake them.
        const batch = Array.from({ length: 1 + ((turn * 7) % 40) }, (_, i) => Buffer.from(JSON.stringify({ turn, i, pad: "q".repeat(2_000 + ((turn * 131 + i * 977) % 28_000)) })));
        const refs = turn % 3 === 0 ? batch.map((b) => log.append(b)) : log.appendMany(batch);
        expect(refs).toHaveLength(batch.length);
        for (let i = 1; i < refs.length; i++) {
          if (turn % 3 !== 0) expect(refs[i]).toEqual({ file: refs[0]!.file, offset: refs[i - 1]!.offset + refs[i - 1]!.length, length: batch[i]!.length });
        }
        batch.forEach((bytes, i) => written.push({ ref: refs[i]!, bytes }));
        if (turn % 5 === 0) await log.fillsDone();
      }
      await log.fillsDone();
      for (const w of written) expect(log.readBytes(w.ref)?.equals(w.bytes)).toBe(true);
      const files = new Set(written.map((w) => w.ref.file));
      expect(files.size).toBeGreaterThan(1);
      // No two payloads overlap in any file.
      for (const file of files) {
        const refs = written.map((w) => w.ref).filter((r) => r.file === file).sort((a, b) => a.offset - b.offset);
        for (let i = 1; i < refs.length; i++) expect(refs[i]!.offset).toBeGreaterThanOrEqual(refs[i - 1]!.offset + refs[i - 1]!.length);
      }
    } finally {
      log.close();
    }
  });

  it("puts every payload whole where its row says, however far the fill has got, and rolls at the segment size", async () => {
    const log = new PayloadLog(join(dir, payloadDirName), { writable: true, segmentBytes: 4 * 1024 * 1024 });
    try {
      const written: { ref: ReturnType<PayloadLog["append"]>; text: string }[] = [];
      // Bursts of ~200 KB, each starting a fill a chunk ahead that runs while the burst goes on;
      // between bursts the fills end (a busy machine only delays that, never changes where bytes go).
      for (let burst = 0; burst < 40; burst++) {
        for (let i = 0; i < 10; i++) {
          const text = JSON.stringify({ n: burst * 10 + i, pad: "z".repeat(5_000 + ((burst * 7919 + i * 104729) % 30_000)) });
          written.push({ ref: log.append(text), text });
        }
        await log.fillsDone();
      }
      // One burst of 2.5 MB in a single turn: the writer overtakes the fill in flight and skips its range.
      for (let i = 0; i < 100; i++) {
        const text = JSON.stringify({ n: 1000 + i, pad: "y".repeat(25_000) });
        written.push({ ref: log.append(text), text });
      }
      await log.fillsDone();
      for (const w of written) expect(log.read(w.ref)).toBe(w.text);
      // No two payloads overlap, and none starts in a file past its segment size.
      const byFile = new Map<string, { offset: number; length: number }[]>();
      for (const { ref } of written) byFile.set(ref.file, [...(byFile.get(ref.file) ?? []), ref]);
      expect(byFile.size).toBeGreaterThan(1);
      for (const refs of byFile.values()) {
        refs.sort((a, b) => a.offset - b.offset);
        for (let i = 1; i < refs.length; i++) expect(refs[i]!.offset).toBeGreaterThanOrEqual(refs[i - 1]!.offset + refs[i - 1]!.length);
        expect(refs.at(-1)!.offset).toBeLessThan(4 * 1024 * 1024 + 1024 * 1024);
      }
      // The writer skips a range only when it caught up with a running fill (the one long burst),
      // not once per fill: at most a chunk per file.
      const spanned = [...byFile.values()].reduce((n, refs) => n + refs.at(-1)!.offset + refs.at(-1)!.length, 0);
      const payloadBytes = written.reduce((n, w) => n + w.ref.length, 0);
      expect(spanned - payloadBytes).toBeLessThanOrEqual(byFile.size * 1024 * 1024);
    } finally {
      log.close();
    }
  });
});
