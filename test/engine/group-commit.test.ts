import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import Database from "better-sqlite3";
import { DEFER_MS, GroupCommit } from "../../src/store/sqlite/group-commit.js";

let db: Database.Database;
let writes: GroupCommit;

beforeEach(() => {
  db = new Database(":memory:");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
  writes = new GroupCommit(db);
});
afterEach(() => db.close());

const insert = (k: string, v: number) => () => db.prepare("INSERT INTO t (k, v) VALUES (?, ?)").run(k, v).changes;
const rows = () => db.prepare("SELECT k, v FROM t ORDER BY k").all();

describe("group commit", () => {
  it("runs the writes of one turn in one transaction, in order, each settling with its own result", async () => {
    const seen: boolean[] = [];
    const results = await Promise.all([
      writes.run(() => (seen.push(db.inTransaction), insert("a", 1)())),
      writes.run(() => (seen.push(db.inTransaction), db.prepare("UPDATE t SET v = v + 1 WHERE k = 'a'").run().changes)),
      writes.run(() => "third"),
    ]);
    expect(results).toEqual([1, 1, "third"]);
    expect(seen).toEqual([true, true]);
    expect(rows()).toEqual([{ k: "a", v: 2 }]);
  });

  it("runs its hook once before each transaction, outside it, and commits the writes when the hook throws", async () => {
    const hooks: boolean[] = [];
    writes.beforeTransaction(() => hooks.push(db.inTransaction));
    await Promise.all([writes.run(insert("a", 1)), writes.run(insert("b", 2))]);
    expect(hooks).toEqual([false]);
    await writes.run(insert("c", 3));
    expect(hooks).toEqual([false, false]);
    writes.beforeTransaction(() => {
      throw new Error("disk full");
    });
    await expect(writes.run(insert("d", 4))).resolves.toBe(1);
    expect(rows()).toHaveLength(4);
  });

  it("rejects only the write that failed; the others of its turn are committed", async () => {
    const settled = await Promise.allSettled([writes.run(insert("a", 1)), writes.run(insert("a", 2)), writes.run(insert("b", 3))]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(rows()).toEqual([
      { k: "a", v: 1 },
      { k: "b", v: 3 },
    ]);
  });

  it("runs a write at once with whatever is waiting, which then settles without another commit", async () => {
    const waiting = writes.run(insert("a", 1));
    expect(writes.runNow(() => db.prepare("SELECT count(*) AS n FROM t").get())).toEqual({ n: 1 });
    await expect(waiting).resolves.toBe(1);
    expect(() => writes.runNow(insert("a", 2))).toThrow(/UNIQUE/);
    expect(rows()).toEqual([{ k: "a", v: 1 }]);
  });

  it("lets writes wait while its gate holds, commits them when it opens, and commits on close regardless", async () => {
    let holding = true;
    let inside = 0;
    const listeners: (() => void)[] = [];
    const gated = new GroupCommit(db, {
      holding: () => holding,
      tryEnter: () => !holding && ++inside > 0,
      leave: () => void inside--,
      waitRelease: () => undefined,
      onRelease: (l) => listeners.push(l),
    });
    let settled = false;
    const pending = gated.run(insert("a", 1)).then((n) => ((settled = true), n));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    expect(gated.held).toBe(true);
    expect(rows()).toEqual([]);
    holding = false;
    for (const l of listeners.splice(0)) l();
    await expect(pending).resolves.toBe(1);
    expect(rows()).toEqual([{ k: "a", v: 1 }]);
    // Each commit marked itself in progress and unmarked itself after.
    expect(inside).toBe(0);

    holding = true;
    const atClose = gated.run(insert("b", 2));
    gated.close();
    await expect(atClose).resolves.toBe(1);
  });

  it("commits what is waiting on close and refuses writes after", async () => {
    const pending = writes.run(insert("a", 1));
    writes.close();
    expect(rows()).toEqual([{ k: "a", v: 1 }]);
    await expect(pending).resolves.toBe(1);
    await expect(writes.run(insert("b", 2))).rejects.toThrow(/closed/);
  });
});

describe("deferred writes", () => {
  // The clock runDeferred judges by is the test's; the deferral's own timer is faked so that a
  // slow machine cannot fire it between two steps (setImmediate stays real: turns still end).
  let clock = 1_000;
  let commits = 0;
  let deferred: GroupCommit;
  const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
  const settledFlag = <T,>(p: Promise<T>) => {
    const state = { settled: false };
    void p.then(() => (state.settled = true));
    return state;
  };

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    clock = 1_000;
    commits = 0;
    deferred = new GroupCommit(db, undefined, () => void commits++, () => clock);
  });
  afterEach(() => vi.useRealTimers());

  it("with no commit asked for lately (a backlog worked off, nothing arriving), they are committed at the end of their turn, together", async () => {
    const a = settledFlag(deferred.runDeferred(insert("a", 1)));
    const b = settledFlag(deferred.runDeferred(insert("b", 2)));
    await endOfTurn();
    expect([a.settled, b.settled]).toEqual([true, true]);
    expect(commits).toBe(1);
    expect(rows()).toEqual([
      { k: "a", v: 1 },
      { k: "b", v: 2 },
    ]);

    // Still true once a commit was asked for, but longer ago than DEFER_MS.
    await deferred.run(insert("c", 3));
    clock += DEFER_MS + 1;
    const d = settledFlag(deferred.runDeferred(insert("d", 4)));
    await endOfTurn();
    expect(d.settled).toBe(true);
    expect(commits).toBe(3);
  });

  it("while commits are asked for, one waits for the next commit asked for and shares its transaction", async () => {
    await deferred.run(insert("a", 1));
    expect(commits).toBe(1);
    const b = settledFlag(deferred.runDeferred(insert("b", 2)));
    await endOfTurn();
    await endOfTurn();
    expect(b.settled).toBe(false);
    expect(deferred.waiting).toBe(1);

    await deferred.run(insert("c", 3));
    await endOfTurn();
    expect(b.settled).toBe(true);
    expect(commits).toBe(2);
  });

  it("while commits are asked for and none comes, one gets its own commit after DEFER_MS", async () => {
    await deferred.run(insert("a", 1));
    const b = settledFlag(deferred.runDeferred(insert("b", 2)));
    await endOfTurn();
    expect(b.settled).toBe(false);
    vi.advanceTimersByTime(DEFER_MS);
    await endOfTurn();
    expect(b.settled).toBe(true);
    expect(commits).toBe(2);
  });
});
