// The SQLite store's group commit: the writes of one turn in one transaction, each settling alone.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { GroupCommit } from "../../src/store/sqlite/group-commit.js";

let dir: string;
let db: Database.Database;
/** A second connection to the same file: it sees only what was committed. */
let other: Database.Database;
let writes: GroupCommit;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "steward-group-commit-"));
  db = new Database(join(dir, "t.db"));
  db.pragma("journal_mode = WAL");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
  other = new Database(join(dir, "t.db"));
  writes = new GroupCommit(db);
});
afterEach(() => {
  other.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (k: string, v: number) => () => db.prepare("INSERT INTO t (k, v) VALUES (?, ?)").run(k, v).changes;
const rows = () => db.prepare("SELECT k, v FROM t ORDER BY k").all();

describe("group commit", () => {
  it("runs the writes of one turn in one transaction, in order, each settling with its own result", async () => {
    const committed = () => other.prepare("SELECT count(*) FROM t").pluck().get();
    const seen: unknown[] = [];
    const results = await Promise.all([
      writes.run(insert("a", 1)),
      // The first write is not committed yet when the second runs: they share a transaction.
      writes.run(() => (seen.push(committed()), db.prepare("UPDATE t SET v = v + 1 WHERE k = 'a'").run().changes)),
      writes.run(() => "third"),
    ]);
    expect(results).toEqual([1, 1, "third"]);
    expect(seen).toEqual([0]);
    expect(committed()).toBe(1);
    expect(rows()).toEqual([{ k: "a", v: 2 }]);
  });

  it("resolves a write only once its transaction committed", async () => {
    const seen = await writes.run(insert("a", 1)).then(() => other.prepare("SELECT k FROM t").pluck().all());
    expect(seen).toEqual(["a"]);
  });

  it("rejects only the write that failed; the others of its turn are committed", async () => {
    const settled = await Promise.allSettled([
      writes.run(insert("a", 1)),
      writes.run(insert("a", 2)),
      writes.run(insert("b", 3)),
    ]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(rows()).toEqual([
      { k: "a", v: 1 },
      { k: "b", v: 3 },
    ]);
  });

  it("commits what is waiting on close and refuses writes after", async () => {
    const pending = writes.run(insert("a", 1));
    writes.close();
    expect(rows()).toEqual([{ k: "a", v: 1 }]);
    await expect(pending).resolves.toBe(1);
    await expect(writes.run(insert("b", 2))).rejects.toThrow(/closed/);
  });
});
