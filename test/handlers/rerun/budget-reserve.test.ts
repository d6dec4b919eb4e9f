// A nearly spent API budget, end to end against the sandbox hub's enforced limits: the re-run a
// policy calls for is still requested, the check run that explains it waits for the reset, and
// the delivery says so in words and is scheduled for the reset (not dropped, not retried before).
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import {
  completedDeliveries,
  newRepo,
  ORG,
  rerunChecks,
  rerunPolicyYaml,
  rerunRequestLog,
  settle,
  startCi,
  startRerunStack,
  stewardOf,
} from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

it("as the budget runs low the re-run goes out; its report waits for the reset, saying until when", async () => {
  const { control, domains } = stack.hub;
  const { repo } = newRepo(stack, rerunPolicyYaml(""));
  const run = startCi(stack, repo);
  domains.actions.scriptAttempt(run.id, 2, "success");
  await settle(stack);

  const installation = control.installation(ORG)!.id;
  const resetAt = new Date(control.now().getTime() + 3_600_000);
  // 400 of 5,000 left: below the tenth kept for acting, enough for the decision's reads.
  control.setRateLimit(installation, { limit: 5000, remaining: 400, resetAt });
  try {
    domains.actions.failJob({
      runId: run.id,
      job: "integration-db",
      step: "Install deps",
      log: "npm ERR! network read ECONNRESET",
    });
    // Not `settle`: the delivery stays queued for the reset, an hour away.
    const stored = await vi.waitFor(
      async () => {
        const [delivery] = completedDeliveries(stack, run.id);
        const found = delivery && (await stewardOf(stack).store.deliveries.getDelivery(delivery.guid));
        expect(found?.delivery.status).toBe("failed");
        return found!;
      },
      { timeout: 90_000, interval: 200 },
    );
    expect(stored.delivery.lastError).toMatch(
      /delayed by GitHub's rate limit until (\d{4}-\d\d-\d\d )?\d\d:\d\d UTC: the rest of this installation's budget is kept for re-runs and deployment answers/,
    );
    expect(rerunRequestLog(stack, repo)).toHaveLength(1);
    expect(rerunChecks(stack, run.head_sha)).toEqual([]);
    expect(stored.delivery.nextRunAt.getTime()).toBeGreaterThanOrEqual(resetAt.getTime());
    expect(stored.delivery.nextRunAt.getTime()).toBeLessThan(resetAt.getTime() + 30_000);
  } finally {
    control.setRateLimit(installation, { limit: 5000, remaining: 5000 });
  }
}, 120_000);
