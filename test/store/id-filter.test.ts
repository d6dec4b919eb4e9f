// The spool's duplicate check skips its index lookup when the filter says an id was never seen:
// that answer must never be wrong, whatever the load; "maybe" may be, rarely at the sized load.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { IdFilter } from "../../src/store/sqlite/id-filter.js";

describe("id filter", () => {
  it("never rules out an id it was given, and rules out nearly all others at 200,000 ids", () => {
    const filter = new IdFilter();
    const added = Array.from({ length: 200_000 }, () => randomUUID());
    for (const id of added) filter.add(id);
    expect(added.filter((id) => !filter.mightHave(id))).toEqual([]);
    const others = Array.from({ length: 100_000 }, () => randomUUID());
    const maybes = others.filter((id) => filter.mightHave(id)).length;
    expect(maybes).toBeLessThan(100); // expected about 2 (1.8e-5 at this load)
  });

  it("overloaded far past its size it says maybe more often, never a wrong no", () => {
    const filter = new IdFilter(16); // 65,536 bits for 100,000 ids
    const added = Array.from({ length: 100_000 }, (_, i) => `delivery-${i}-${randomUUID()}`);
    for (const id of added) filter.add(id);
    expect(added.every((id) => filter.mightHave(id))).toBe(true);
    expect(new IdFilter(16).mightHave(added[0]!)).toBe(false);
  });
});
