// The daily re-run budget's slots in a real SQLite store: counted against a budget when one is set,
// and, without one, kept without reading the day's other slots (that listing grows all day).
import { describe, expect, it } from "vitest";
import { takeSlot, usedToday } from "../../../handlers/rerun/budget.js";
import { handlerStore } from "../../../src/store/contract.js";
import type { Store } from "../../../src/store/types.js";
import { sqliteStorePerTest } from "../../engine/scratch-store.js";

const scratch = sqliteStorePerTest();

/** The handler's view of the store, counting the prefixes it lists. */
function listed(): { store: Store; lists: string[] } {
  const inner = handlerStore(scratch.store.kv);
  const lists: string[] = [];
  return { lists, store: { ...inner, list: (prefix) => (lists.push(prefix), inner.list(prefix)) } };
}

const at = new Date("2026-11-26T12:00:00Z");

describe("re-run budget slots", () => {
  it("without a budget, keeps each slot and lists nothing, however many re-runs the day has had", async () => {
    const { store, lists } = listed();
    for (let i = 0; i < 500; i++) expect(await takeSlot(store, 7, `${i}:1`, undefined, at)).toBe(true);
    expect(lists).toEqual([]);
    // Kept, so a budget turned on later in the day counts them.
    expect(await usedToday(store, 7, 500, at)).toBe(500);
    expect(await takeSlot(store, 7, "500:1", 500, at)).toBe(false);
  });

  it("with a budget, takes slots up to it, holds a slot already taken, and counts per repository and day", async () => {
    const { store } = listed();
    expect(await takeSlot(store, 7, "1:1", 2, at)).toBe(true);
    expect(await takeSlot(store, 7, "1:1", 2, at)).toBe(true); // the same re-run, retried
    expect(await takeSlot(store, 7, "2:1", 2, at)).toBe(true);
    expect(await takeSlot(store, 7, "3:1", 2, at)).toBe(false);
    expect(await takeSlot(store, 8, "3:1", 2, at)).toBe(true);
    expect(await takeSlot(store, 7, "3:1", 2, new Date("2026-11-27T00:00:01Z"))).toBe(true);
    expect(await usedToday(store, 7, 2, at)).toBe(2);
  });
});
