// The secrets page's drift column compares GitHub's updated_at with Steward's write as instants:
// one moment spelled with or without milliseconds, or in another offset, is no drift; a later
// change (beyond the one second both clocks round to) is.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { driftOf } from "../../../handlers/secrets/console.js";

const instants = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }).map((ms) => ms - (ms % 1000));
/** The same instant as GitHub or a Date header may spell it. */
const spellings = (ms: number) => {
  const iso = new Date(ms).toISOString();
  const plusTwo = new Date(ms + 2 * 3_600_000).toISOString().replace(/\.\d{3}Z$/, "+02:00");
  return [iso, iso.replace(/\.000Z$/, "Z"), plusTwo];
};

describe("secrets drift on the console", () => {
  it("the same instant, however spelled, is no drift", () => {
    fc.assert(
      fc.property(instants, fc.nat(2), fc.nat(2), (ms, a, b) => {
        expect(driftOf({ remoteUpdatedAt: spellings(ms)[a]!, serverWrittenAt: spellings(ms)[b]! })).toBe("none seen");
      }),
    );
    expect(driftOf({ remoteUpdatedAt: "2026-05-01T10:00:17Z", serverWrittenAt: "2026-05-01T10:00:17.000Z" })).toBe(
      "none seen",
    );
  });

  it("a change after Steward's write, by more than a second, is drift; earlier is not", () => {
    fc.assert(
      fc.property(instants, fc.integer({ min: 2, max: 86_400 }), fc.nat(2), fc.nat(2), (ms, later, a, b) => {
        expect(driftOf({ remoteUpdatedAt: spellings(ms + later * 1000)[a]!, serverWrittenAt: spellings(ms)[b]! })).toBe(
          "changed outside Steward",
        );
        expect(driftOf({ remoteUpdatedAt: spellings(ms)[a]!, serverWrittenAt: spellings(ms + later * 1000)[b]! })).toBe(
          "none seen",
        );
      }),
    );
  });

  it("says it does not know when either time is missing or unreadable", () => {
    expect(driftOf({ remoteUpdatedAt: "", serverWrittenAt: "2026-05-01T10:00:17Z" })).toBe("not known");
    expect(driftOf({ remoteUpdatedAt: "2026-05-01T10:00:17Z", serverWrittenAt: undefined })).toBe("not known");
    expect(driftOf({ remoteUpdatedAt: "soon", serverWrittenAt: "2026-05-01T10:00:17Z" })).toBe("not known");
  });
});
