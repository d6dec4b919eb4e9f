import { describe, expect, it } from "vitest";
import { findRedeliveries, type HookDeliveryAttempt } from "../../src/recovery/redeliver.js";

const now = new Date("2026-11-21T12:00:00Z");
let nextId = 1;
function attempt(guid: string, status: number, minutesAgo: number, redelivery = false): HookDeliveryAttempt {
  return {
    id: nextId++,
    guid,
    delivered_at: new Date(now.getTime() - minutesAgo * 60_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    redelivery,
    status_code: status,
    event: "push",
    action: null,
  };
}

describe("findRedeliveries", () => {
  const lookbackMs = 60 * 60_000;
  const none = () => false;

  it.each([
    ["a 500 answer", [attempt("a", 500, 5)], ["a"]],
    ["a connection that never reached us (status 0)", [attempt("b", 0, 5)], ["b"]],
    ["a 202 answer", [attempt("c", 202, 5)], []],
    ["a failure followed by a successful redelivery", [attempt("d", 503, 10), attempt("d", 202, 5, true)], []],
    ["a failure outside the look-back window", [attempt("e", 500, 120)], []],
    ["two failed attempts of one delivery: asked once", [attempt("f", 500, 10), attempt("f", 502, 5, true)], ["f"]],
    ["a 4xx answer (e.g. 401 during a secret rotation)", [attempt("g", 401, 5)], ["g"]],
  ])("%s", (_label, attempts, expected) => {
    expect(findRedeliveries(attempts, { now, lookbackMs, known: none }).map((c) => c.guid)).toEqual(expected);
  });

  it("skips deliveries Steward already recorded (e.g. it answered after GitHub's timeout)", () => {
    const attempts = [attempt("h", 0, 5), attempt("i", 500, 5)];
    expect(findRedeliveries(attempts, { now, lookbackMs, known: (g) => g === "h" }).map((c) => c.guid)).toEqual(["i"]);
  });

  it("redelivers the latest attempt, oldest delivery first", () => {
    const first = attempt("j", 500, 30);
    const retry = attempt("j", 500, 20, true);
    const other = attempt("k", 500, 25);
    const out = findRedeliveries([retry, other, first], { now, lookbackMs, known: none });
    expect(out.map((c) => [c.guid, c.id])).toEqual([
      ["k", other.id],
      ["j", retry.id],
    ]);
  });
});
