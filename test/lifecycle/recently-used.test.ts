// keepRecent (src/lifecycle/recently-used.ts): a Map bounded to the entries used last.
import { describe, expect, it } from "vitest";
import { keepRecent } from "../../src/lifecycle/recently-used.js";

describe("keepRecent", () => {
  it("keeps the max entries used last, a use of an old one moving it to the newest", () => {
    const map = new Map<string, number>();
    for (const [i, key] of ["a", "b", "c"].entries()) keepRecent(map, key, i, 3);
    keepRecent(map, "a", 10, 3);
    keepRecent(map, "d", 4, 3);
    expect([...map]).toEqual([
      ["c", 2],
      ["a", 10],
      ["d", 4],
    ]);
    keepRecent(map, "e", 5, 1);
    expect([...map]).toEqual([["e", 5]]);
  });
});
