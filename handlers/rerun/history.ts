// The explanations of one commit's re-run decisions, kept in the store and shown as one
// `steward/rerun` check run on the commit.
import { withStoreLock } from "../../src/index.js";
import { CHECK_NAME, MAX_EXPLANATIONS, renderCheck, type ActionTaken, type Explanation } from "./explain.js";
import { DECIDED_TTL_MS, historyKey } from "./keys.js";
import type { Ops, RerunTask } from "./task.js";

/** Append the explanation to the commit's history and show the history in the check run. */
export async function explainAndReport(ops: Ops, task: RerunTask, action: ActionTaken, detail?: string): Promise<void> {
  const explanation: Explanation = {
    runId: task.run.id,
    workflow: task.run.name,
    attempt: task.run.runAttempt,
    maxAttempts: task.maxAttempts,
    htmlUrl: task.htmlUrl,
    action,
    detail,
    reasons: task.reasons,
    verdicts: task.verdicts,
    ...(task.flake ? { flake: true } : {}),
    ...(task.withheld !== undefined ? { withheld: task.withheld } : {}),
    at: new Date().toISOString(),
  };
  const key = historyKey(task.repoId, task.run.headSha);
  // Decisions on one commit (another workflow, the next attempt) may finish at the same time;
  // one at a time keeps every explanation and one check run.
  await withStoreLock(ops.store, `${key}:lock`, () => appendAndReport(ops, task, key, explanation));
}

async function appendAndReport(ops: Ops, task: RerunTask, key: string, explanation: Explanation): Promise<void> {
  const previous = (await ops.store.get<Explanation[]>(key)) ?? [];
  // A retried task must not list the same decision twice.
  const history = previous
    .filter((e) => !(e.runId === explanation.runId && e.attempt === explanation.attempt))
    .concat(explanation)
    .slice(-MAX_EXPLANATIONS * 2);
  await ops.store.set(key, history, { ttlMs: DECIDED_TTL_MS });
  const { title, summary } = renderCheck(history);
  await ops.checks.report({
    owner: task.owner,
    repo: task.repo,
    headSha: task.run.headSha,
    name: CHECK_NAME,
    status: "completed",
    conclusion: "neutral",
    title,
    summary,
    externalId: `rerun:${task.run.id}:${task.run.runAttempt}`,
  });
}
