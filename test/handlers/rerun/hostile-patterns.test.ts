// Hostile patterns through the real service: policies whose regexes and globs make a backtracking
// engine run for ages arrive from the sandbox hub as real deliveries while `/healthz` is polled over
// HTTP. Every delivery must be decided and the service must keep answering throughout.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import { HEALTH_BOUND_MS } from "../../support/responsiveness.js";
import { newRepo, outcomesOf, rerunPolicyYaml, settle, startRerunStack, stewardOf } from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

/** Polls `/healthz` (timing out at the liveness bound) until stopped; returns every failed poll. */
function watchHealth(url: string): { stop(): Promise<string[]> } {
  const failures: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(HEALTH_BOUND_MS) });
        await res.text();
        if (res.status !== 200) failures.push(`HTTP ${res.status}`);
      } catch (err) {
        failures.push((err as Error).name);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return failures;
    },
  };
}

const ADVERSARIAL_LINE = "a".repeat(40) + "!";

describe("hostile policy patterns against the running service", () => {
  it("decides every delivery and keeps /healthz answering within the liveness bound", async () => {
    const { actions } = stack.hub.domains;
    const health = watchHealth(`${stewardOf(stack).url.replace(/\/$/, "")}/healthz`);
    const generated = fc.sample(
      fc
        .array(fc.constantFrom("a", "a+", "a*", "(a|aa)", "(a+)+", "(a*)*", "(?:a?)+"), { minLength: 2, maxLength: 5 })
        .map((parts) => `/^(${parts.join("")})+$/`),
      { numRuns: 4, seed: 12 },
    );
    const cases = [
      // The regex against a log of 40 `a` and a `!`, and a 2 MiB log of such lines.
      { rules: `  rules:\n    - log: ["/(a+)+$/"]\n`, job: "integration-db", log: ADVERSARIAL_LINE },
      {
        rules: `  rules:\n    - log: ["/(a+)+$/"]\n`,
        job: "integration-db",
        log: `${ADVERSARIAL_LINE}\n`.repeat(50_000),
      },
      // The globs against a job name of 40 `a` and a branch of 120 dashes.
      { rules: `  rules:\n    - jobs: ["*a*a*a*a*a*a*a*a*a*a*c"]\n`, job: "a".repeat(40), log: "x" },
      {
        rules: `  rules:\n    - runner_lost: true\n`,
        extra: `  branches: ["*-*-*-*-*-rc"]\n`,
        branch: "-".repeat(120),
        job: "integration-db",
        log: "x",
      },
      ...generated.map((re) => ({
        rules: `  rules:\n    - log: ["${re}"]\n`,
        job: "integration-db",
        log: `${ADVERSARIAL_LINE}\n`.repeat(1000),
      })),
    ];
    const runs: number[] = [];
    for (const c of cases) {
      const { repo } = newRepo(stack, rerunPolicyYaml(c.extra ?? "", c.rules));
      const run = actions.startRun({
        owner: "acme",
        repo,
        workflow: "CI",
        jobs: [{ name: c.job, steps: ["Set up job", "Test", "Complete job"] }],
        ...(c.branch ? { branch: c.branch } : {}),
      });
      actions.failJob({ runId: run.id, job: c.job, step: "Test", log: c.log });
      runs.push(run.id);
    }
    await settle(stack);
    const failures = await health.stop();

    const outcomes = await Promise.all(runs.map((id) => outcomesOf(stack, id)));
    expect(outcomes.map((o) => o.map((x) => x.status))).toEqual(
      cases.map(() => [expect.stringMatching(/^(done|skipped)$/)]),
    );
    // Nothing matched: none of the hostile patterns matches its hostile input.
    expect(outcomes[0]![0]!.detail).toContain("not re-run: 1 of 1 failed jobs are not transient: integration-db");
    expect(outcomes[1]![0]!.detail).toContain("not re-run: 1 of 1 failed jobs are not transient: integration-db");
    expect(outcomes[2]![0]!.detail).toContain(`not transient: ${"a".repeat(40)}`);
    expect(outcomes[3]![0]!.detail).toContain("is not in rerun.branches");
    expect(failures).toEqual([]);
  });
});
