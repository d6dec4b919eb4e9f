// The load model is a function of its seed: the same seed gives the same day, another seed another.
import { describe, expect, it } from "vitest";
import { BUSIEST_HOUR, HOURLY, generateModel, hourOf, summarise } from "./model.js";

describe("load model", () => {
  it("generates the same day for the same seed", () => {
    const a = generateModel({ repos: 200, seed: 7 });
    expect(generateModel({ repos: 200, seed: 7 })).toEqual(a);
    expect(generateModel({ repos: 200, seed: 8 }).day).not.toEqual(a.day);
    expect(a.scale).toBe(50);
  });

  it("has every kind of event, in time order, with one admin-policy change in the busiest hour", () => {
    const m = generateModel({ repos: 10_000, seed: 59 });
    expect(m.day.map((e) => e.at)).toEqual([...m.day.map((e) => e.at)].sort((x, y) => x - y));
    expect(Object.keys(summarise(m.day))).toEqual(
      expect.arrayContaining([
        "pull_request.opened",
        "pull_request.synchronize",
        "merge",
        "push",
        "workflow runs",
        "runs failed (transient)",
        "runs failed (real)",
        "deployment protection rules",
        "merge groups",
        "repository.created",
        "installation_repositories",
      ]),
    );
    expect(hourOf(m, BUSIEST_HOUR).filter((e) => e.kind === "admin-policy")).toHaveLength(1);
    expect(HOURLY.reduce((a, b) => a + b, 0)).toBeCloseTo(1);
  });
});
