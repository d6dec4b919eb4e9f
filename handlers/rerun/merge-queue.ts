// Merge queues: a run of a merge group (`event: merge_group`) is re-run only while the group exists.
// A re-run planned for later (the policy's delay, a busy run) is remembered under the group's head
// commit; `merge_group.destroyed` cancels those plans and says so in the check run. A plan that
// slips through (the delivery is late) still finds the group's branch gone and stands down.
import type { Outcome } from "../../src/index.js";
import { DECIDED_TTL_MS, planPrefix } from "./keys.js";
import { explainAndReport } from "./history.js";
import type { Ops, RerunTask } from "./task.js";

export const MERGE_GROUP_EVENT = "merge_group";

interface PlannedRerun {
  taskKey: string;
  task: RerunTask;
}

/**
 * Remember a scheduled re-run of a merge group's run, so the group's end can cancel it, and say in
 * the check run that it is planned (and for when): the group's checks show it before it is made.
 */
export async function rememberPlan(ops: Ops, task: RerunTask, taskKey: string, runAt: Date): Promise<void> {
  if (task.run.event !== MERGE_GROUP_EVENT) return;
  const plan: PlannedRerun = { taskKey, task };
  await ops.store.set(`${planPrefix(task.repoId, task.run.headSha)}${taskKey}`, plan, { ttlMs: DECIDED_TTL_MS });
  await explainAndReport(ops, task, "planned", runAt.toISOString());
}

/** A planned re-run of a merge group's run that found the group gone: it stands down and says so. */
export async function standDown(ops: Ops, task: RerunTask, why: string): Promise<void> {
  if (task.run.event !== MERGE_GROUP_EVENT) return;
  await explainAndReport(ops, { ...task, reasons: [...task.reasons, why] }, "stood_down", why);
}

export interface DestroyedGroup {
  repoId: number;
  headSha: string;
  headRef: string;
  reason: string;
}

/** `merge_group.destroyed`: cancel every re-run planned for the group's runs and explain why. */
export async function cancelPlans(ops: Ops, group: DestroyedGroup): Promise<Outcome> {
  const plans = await ops.store.list<PlannedRerun>(planPrefix(group.repoId, group.headSha));
  if (plans.length === 0) return { status: "skipped", reason: `no re-run planned for merge group ${group.headRef}` };
  const why = `merge group ${group.headRef.replace(/^refs\/heads\//, "")} was destroyed (${group.reason}) before the re-run`;
  for (const { key, value } of plans) {
    await ops.scheduler.cancel(value.taskKey);
    await ops.store.audit({
      kind: "rerun_cancelled",
      source: "rerun",
      details: {
        repository: `${value.task.owner}/${value.task.repo}`,
        runId: value.task.run.id,
        attempt: value.task.run.runAttempt,
        reason: why,
      },
    });
    await explainAndReport(ops, { ...value.task, reasons: [...value.task.reasons, why] }, "cancelled", why);
    await ops.store.delete(key);
  }
  return {
    status: "done",
    summary: `cancelled ${plans.length} planned re-run${plans.length === 1 ? "" : "s"}: ${why}`,
  };
}
