import { describe, expect, it } from "vitest";
import { createPushHints, MAX_HINTS } from "../../src/engine/push-hints.js";

describe("push hints", () => {
  it("gives each hint once, and a push without one reads its text", () => {
    const hints = createPushHints();
    hints.note("a", true);
    hints.note("b", false);
    expect(hints.take("a")).toBe(true);
    expect(hints.take("a")).toBeUndefined();
    expect(hints.take("b")).toBe(false);
    expect(hints.take("never")).toBeUndefined();
  });

  it("keeps at most its bound, dropping the oldest hint never taken", () => {
    const hints = createPushHints(3);
    for (const id of ["1", "2", "3", "4"]) hints.note(id, true);
    expect(hints.take("1")).toBeUndefined();
    expect(["2", "3", "4"].map((id) => hints.take(id))).toEqual([true, true, true]);
    // Noted again, a hint is the newest: the bound drops the others first.
    for (const id of ["5", "6", "7"]) hints.note(id, false);
    hints.note("5", true);
    hints.note("8", false);
    expect(["5", "6", "7", "8"].map((id) => hints.take(id))).toEqual([true, undefined, false, false]);
    expect(MAX_HINTS).toBeGreaterThanOrEqual(1_000);
  });
});
