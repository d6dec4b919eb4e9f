// Patterns as slow as validation allows, against job logs of several MiB, through the running
// service: matching runs in a worker stopped at its deadline, so while it runs `/healthz` answers
// within 1 s and a signed delivery within 2 s, and the run is not re-run (fail closed) with a reason
// saying the match was stopped at its bound.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import { validatePolicyText } from "../../../src/policy/validate.js";
import rerun from "../../../handlers/rerun/index.js";
import { watchResponsiveness, HEALTH_BOUND_MS, PING_BOUND_MS } from "../../support/responsiveness.js";
import { newRepo, outcomesOf, rerunPolicyYaml, rerunPosts, settle, startRerunStack, stewardOf } from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

/**
 * Each compiles to about half the bound on one pattern. Against lines of random `a` and `b` neither
 * the literal prefilter nor the lazy DFA helps: a 16 KiB line costs about 0.7 s per pattern.
 */
const SLOW = ["/a[ab]{990}[#%]/", "/b[ab]{990}[#%]/"];

/** `lines` lines of `width` random `a` and `b` (seeded: the same log every run). */
function abLog(lines: number, width: number): string {
  let seed = 52;
  const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  const line = () => Array.from({ length: width }, () => (next() & 0x10000 ? "a" : "b")).join("");
  return Array.from({ length: lines }, () => `${line()}\n`).join("");
}

describe("log patterns as slow as validation allows", () => {
  it("pass validation, are stopped at their bound against MiB logs, and the run is not re-run", async () => {
    const policy = rerunPolicyYaml(
      "",
      `  rules:\n    - jobs: ["integration-*"]\n      log: [${SLOW.map((s) => JSON.stringify(s)).join(", ")}]\n`,
    );
    expect(validatePolicyText(policy, { file: ".github/steward.yml", handlers: [rerun] }).problems).toEqual([]);

    const { repo } = newRepo(stack, policy);
    const { actions } = stack.hub.domains;
    // 4 MiB: minutes of matching on one thread.
    const log = abLog(256, 16 * 1024);
    const run = actions.startRun({
      owner: "acme",
      repo,
      workflow: "CI",
      jobs: [{ name: "integration-db", steps: ["Set up job", "Test", "Complete job"] }],
    });
    const watcher = watchResponsiveness(
      stewardOf(stack).url.replace(/\/$/, ""),
      stack.webhookUrl,
      stack.config.webhookSecrets[0]!,
    );
    actions.failJob({ runId: run.id, job: "integration-db", step: "Test", log });
    await settle(stack);
    const { health, pings, failures } = await watcher.stop();

    expect(failures).toEqual([]);
    expect(health.length).toBeGreaterThan(5);
    expect(pings.length).toBeGreaterThan(2);
    expect(Math.max(...health)).toBeLessThan(HEALTH_BOUND_MS);
    expect(Math.max(...pings)).toBeLessThan(PING_BOUND_MS);
    const outcomes = await outcomesOf(stack, run.id);
    expect(outcomes).toEqual([
      {
        attempt: 1,
        status: "done",
        detail: expect.stringMatching(
          /not re-run.*integration-db.*rule 1: matching 2 log patterns against a \d+-character job log was stopped at its bound of \d+ ms, so the rule was not evaluated/,
        ),
      },
    ]);
    expect(rerunPosts(stack, repo)).toEqual([]);
  }, 60_000);
});
