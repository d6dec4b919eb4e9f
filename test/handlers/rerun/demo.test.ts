// The rerun demo scenario on a fresh sandbox stack with the built-in handlers: what Steward did,
// as the hub saw it (re-run requests, attempts, the steward/rerun check run's explanations).
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import scenario from "../../../src/sandbox/demo/scenarios/rerun.js";
import { startSandboxStack } from "../../../src/sandbox/stack.js";

describe("rerun demo scenario", () => {
  it("re-runs the transient failure, leaves the real one, and re-runs and records a green-red-green flake", async () => {
    const stack = await startSandboxStack({ logger: pino({ level: "silent" }) });
    try {
      const rows = await scenario.run(stack, () => {});
      expect(rows.map((r) => r.result)).toEqual([
        "failure",
        expect.stringMatching(/^run \d+ attempt 1: re-ran the failed jobs/),
        "failure (mode failed)",
        expect.stringMatching(/^not re-run: 1 of 1 failed jobs are not transient: integration-db/),
        "neutral: Did not re-run CI attempt 2",
        'not re-run: run concluded "success"',
        "not re-run: 1 of 1 failed jobs are not transient: e2e",
        expect.stringMatching(
          /^flake pattern: job e2e failed on [0-9a-f]{7} but passed on [0-9a-f]{7} before it and [0-9a-f]{7} after it on branch main: re-ran job e2e and its dependents alone/,
        ),
        "attempt 2: success (mode job)",
        "neutral: Re-ran E2E attempt 1: flake (failed between passing commits)",
      ]);
    } finally {
      await stack.close();
    }
  });
});
