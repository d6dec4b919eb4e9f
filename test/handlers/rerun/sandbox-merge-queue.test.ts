// Merge queues end to end: a pull request enters the sandbox hub's merge queue, a workflow runs on
// the group's head commit (`event: merge_group`), and Steward re-runs it only while the group exists.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import type { MergeGroup } from "@steward/sandbox-hub";
import {
  ORG,
  holdDeliveries,
  newRepo,
  outcomesOf,
  requestsFor,
  rerunChecks,
  rerunPolicyYaml,
  rerunPosts,
  settle,
  startCi,
  startRerunStack,
  stewardOf,
} from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

/** A repository with `policy`, a pull request in its merge queue, and CI failing transiently on the group. */
async function queuedRun(policy: string): Promise<{ repo: string; group: MergeGroup; runId: number; headSha: string }> {
  const { repo } = newRepo(stack, policy);
  const { control, domains } = stack.hub;
  const pr = control.openPullRequest({
    owner: ORG,
    repo,
    head: "feature/q",
    files: { "q.txt": "1\n" },
    title: "queue me",
  });
  const group = control.enqueuePullRequest({ owner: ORG, repo, number: pr.number });
  const run = startCi(stack, repo, { event: "merge_group", branch: group.headRef, sha: group.headSha });
  domains.actions.failJob({ runId: run.id, job: "integration-db", runnerLost: true });
  await settle(stack);
  return { repo, group, runId: run.id, headSha: run.head_sha };
}

const plannedTasks = async (runId: number) =>
  (await stewardOf(stack).store.tasks.listTasks()).filter((t) => JSON.stringify(t).includes(`"id":${runId}`));

describe("rerun in merge queues", () => {
  it("sends merge_group checks_requested for the group's head commit on its readonly branch", async () => {
    const { repo, group } = await queuedRun(rerunPolicyYaml("  events: [merge_group]\n"));
    const [d] = stack.hub.control
      .deliveries()
      .filter((x) => x.event === "merge_group" && (x.payload.repository as { name: string }).name === repo);
    expect(d!.action).toBe("checks_requested");
    expect(d!.payload.merge_group).toMatchObject({
      head_sha: group.headSha,
      head_ref: `refs/heads/gh-readonly-queue/main/pr-1-${group.baseSha}`,
      base_ref: "refs/heads/main",
    });
  });

  it("re-runs a merge group's run while the group exists (events: [merge_group])", async () => {
    const { repo, headSha } = await queuedRun(rerunPolicyYaml("  events: [merge_group]\n"));
    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);
    expect(rerunChecks(stack, headSha)[0]!.output.title).toBe("Re-ran CI attempt 1: transient failure");
  });

  it("leaves merge group runs alone when events does not name merge_group", async () => {
    const { repo, runId } = await queuedRun(rerunPolicyYaml("  events: [push]\n"));
    expect(rerunPosts(stack, repo)).toEqual([]);
    expect(await outcomesOf(stack, runId)).toEqual([
      { attempt: 1, status: "skipped", detail: 'event "merge_group" is not in rerun.events' },
    ]);
  });

  it("merge_group.destroyed cancels a planned re-run and the check run says so", async () => {
    const { repo, group, runId, headSha } = await queuedRun(
      rerunPolicyYaml("  events: [merge_group]\n").replace("delay: 0s", "delay: 10m"),
    );
    expect(await plannedTasks(runId)).toHaveLength(1);
    // Planned, not made: the group's check run says so before the re-run.
    const [planned] = rerunChecks(stack, headSha);
    expect(planned!.output.title).toBe("Re-run of CI attempt 1 planned");
    expect(planned!.output.summary).toMatch(
      /\*\*Action:\*\* re-run planned for \d{4}-\d\d-\d\dT[\d:.]+Z, not made yet \(attempt 2 of 2\)\./,
    );
    stack.hub.control.destroyMergeGroup(group, "dequeued");
    await settle(stack);

    expect(await plannedTasks(runId)).toEqual([]);
    expect(rerunPosts(stack, repo)).toEqual([]);
    const [check] = rerunChecks(stack, headSha);
    expect(check!.output.title).toBe("Did not re-run CI attempt 1: cancelled");
    expect(check!.output.summary).toContain(
      `merge group gh-readonly-queue/main/pr-1-${group.baseSha} was destroyed (dequeued) before the re-run`,
    );
  });

  it("a planned re-run whose group is gone stands down even when the destroyed event never arrived", async () => {
    // Planned well ahead and brought due by moving the hub's clock (Steward's), once the group is
    // gone: a real delay raced the test's own steps on a loaded machine and ran the re-run first.
    const { repo, group, runId, headSha } = await queuedRun(
      rerunPolicyYaml("  events: [merge_group]\n").replace("delay: 0s", "delay: 10m"),
    );
    expect(await plannedTasks(runId)).toHaveLength(1);
    expect(rerunChecks(stack, headSha)[0]!.output.title).toBe("Re-run of CI attempt 1 planned");
    const held = await holdDeliveries(stack);
    stack.hub.control.destroyMergeGroup(group, "invalidated");
    await held.release();
    stack.hub.control.advanceClock(11 * 60_000);
    await vi.waitFor(async () => expect(await plannedTasks(runId)).toEqual([]), { timeout: 45_000, interval: 100 });
    await settle(stack);

    expect(await plannedTasks(runId)).toEqual([]);
    expect(rerunPosts(stack, repo)).toEqual([]);
    const branchReads = requestsFor(stack, repo).filter(
      (r) =>
        r.path.endsWith(`/branches/${encodeURIComponent(group.headRef)}`) ||
        r.path.endsWith(`/branches/${group.headRef}`),
    );
    expect(branchReads.map((r) => r.status)).toContain(404);
    // It stood down, and the check run says so instead of still saying "planned".
    const [check] = rerunChecks(stack, headSha);
    expect(check!.output.title).toBe("Did not re-run CI attempt 1: stood down");
    expect(check!.output.summary).toContain("**Action:** not re-run: the planned re-run stood down (");
  }, 90_000);
});
