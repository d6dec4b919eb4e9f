// The bench harness with tiny counts: every server starts, takes signed deliveries and answers
// them, the burst and both end-to-end flows complete for Steward and for a Probot app, the load model's hour is replayed for
// Steward and the Probot app, and the report renders. Nothing here is
// timed: speed is what `npm run bench` reports.
import { describe, expect, it } from "vitest";
import { PEER, PROBOT, STEWARD, runBench, type BenchOptions } from "./bench.js";
import { PROBOT_APP } from "./e2e.js";
import { renderResults } from "./report.js";

// Steward's servers from their sources: a test never builds the checkout's dist/ (test/package).
process.env.BENCH_FROM_SOURCE = "1";

const TINY: BenchOptions = {
  seconds: 1,
  connections: [2],
  burst: { deliveries: 100, connections: 10 },
  e2eRuns: 1,
  console: { deliveries: 300, loads: 1 },
  modelRepos: 20,
};

describe("bench harness", () => {
  it("measures every server, the burst and the end-to-end flows", { timeout: 600_000 }, async () => {
    const results = await runBench(TINY, () => {});
    expect(results.intake.map((c) => c.name)).toEqual(
      expect.arrayContaining([STEWARD, "Steward (Redis)", PEER, PROBOT]),
    );
    for (const c of results.intake) {
      expect(c.levels.map((l) => l.connections)).toEqual([2]);
      for (const l of c.levels)
        expect({ server: c.name, answered: l.answered > 0, refused: l.refused, errors: l.errors }).toEqual({
          server: c.name,
          answered: true,
          refused: 0,
          errors: 0,
        });
      expect(c.peakRss).toBeGreaterThan(0);
    }
    expect(results.burst).toMatchObject({ answered: 100, refused: 0, errors: 0 });
    // Steward's answers, then the Probot app's: each flow answered by each.
    expect(results.e2e.map((e) => [e.server, e.flow, e.answered])).toEqual(
      ["Steward", PROBOT_APP].flatMap((server) => [
        [server, "re-run (workflow_run failed -> re-run request)", 1],
        [server, "deployment_protection_rule -> answer", 1],
      ]),
    );
    expect(results.console.map((c) => c.store)).toEqual(expect.arrayContaining(["SQLite", "Redis"]));
    for (const c of results.console) expect(c.pages.map((p) => p.page)).toContain("dead letters");
    // The load model's hour, replayed for both apps against the hub: deliveries sent, requests counted, every step done.
    for (const replay of [results.scale.steward, results.scale.probot])
      expect({
        app: replay.app,
        deliveries: replay.deliveries > 0,
        requests: replay.requests > 0,
        errors: replay.replayErrors,
      }).toEqual({
        app: replay.app,
        deliveries: true,
        requests: true,
        errors: 0,
      });
    expect(renderResults(results, TINY)).toContain("Floors:");
  });
});
