// The overview's API budget is every replica's view: two processes (each its own budget and
// recorder, as each Steward process has) write to one store, and the budget read back holds, for
// each installation, the newest observation either made; a process's own rows count before they
// are written. On SQLite and, when it runs, Redis.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiBudget, budgetRecorder, readBudget } from "../../src/console/budget.js";
import type { StewardStore } from "../../src/store/contract.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { redisStores, redisUp } from "../redis/support.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const c of cleanups.splice(0)) await c();
});

const backends: { name: string; skip: boolean; open(): Promise<StewardStore> }[] = [
  {
    name: "sqlite",
    skip: false,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "steward-budget-"));
      const store = openSqliteStore(dir);
      cleanups.push(async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      });
      return store;
    },
  },
  {
    name: "redis",
    skip: !redisUp,
    async open() {
      const stores = redisStores();
      cleanups.push(() => stores.dispose());
      return stores.open();
    },
  },
];

for (const backend of backends) {
  describe.skipIf(backend.skip)(`API budget across processes on ${backend.name}`, () => {
    it("merges every process's rows, the newest observation of each installation", async () => {
      const store = await backend.open();
      const a = new ApiBudget();
      const b = new ApiBudget();
      const writeA = budgetRecorder(store.kv, a, { flushMs: 3_600_000 });
      const writeB = budgetRecorder(store.kv, b, { flushMs: 3_600_000 });
      cleanups.push(
        () => writeA.close(),
        () => writeB.close(),
      );
      vi.useFakeTimers({ toFake: ["Date"], now: 1_000_000 });
      a.note(1, 4_000, { limit: 5_000, resetAt: 2_000_000 });
      a.note(2, 900, { limit: 5_000 });
      vi.setSystemTime(1_000_500);
      b.note(1, 3_500, { limit: 5_000, resetAt: 2_000_000 });
      b.note(3, 12_000, { limit: 12_500 });
      await writeA.flush();
      await writeB.flush();

      const rows = (await readBudget(store.kv)).sort((x, y) => Number(x.installation) - Number(y.installation));
      expect(rows).toEqual([
        { installation: 1, remaining: 3_500, limit: 5_000, resetAt: 2_000_000, at: 1_000_500 },
        { installation: 2, remaining: 900, limit: 5_000, at: 1_000_000 },
        { installation: 3, remaining: 12_000, limit: 12_500, at: 1_000_500 },
      ]);

      // A newer observation in the first process: its own view counts before it is written, and after.
      vi.setSystemTime(1_001_000);
      a.note(1, 3_400, { limit: 5_000, resetAt: 2_000_000 });
      expect((await readBudget(store.kv, a)).find((r) => r.installation === 1)?.remaining).toBe(3_400);
      expect((await readBudget(store.kv)).find((r) => r.installation === 1)?.remaining).toBe(3_500);
      await writeA.flush();
      expect((await readBudget(store.kv, b)).find((r) => r.installation === 1)?.remaining).toBe(3_400);
    });
  });
}
