// Acting on a re-run decision: record it, then re-check that the run is still current, ask the
// API to re-run (now or from a scheduled task), turn its refusals into outcomes, and explain what
// happened in the `steward/rerun` check run.
import type { Outcome } from "../../src/index.js";
import { budgetStop, decide, supersededReason, type Decision, type RunFacts } from "./decide.js";
import { actionText, type ActionTaken } from "./explain.js";
import { explainAndReport } from "./history.js";
import type { Ops, RerunScope, RerunTask } from "./task.js";
import { requestKey, taskKey } from "./keys.js";
import { currentHead, gatherFacts, getRun } from "./facts.js";
import { returnSlot, takeSlot, usedToday } from "./budget.js";
import { rememberPlan, standDown } from "./merge-queue.js";
import type { ActingRerunPolicy } from "./policy.js";
import { recordRerunFacts } from "./record.js";

/** How many times a re-run refused with "already running" is tried again before giving up. */
export const MAX_BUSY_RETRIES = 5;
/** Wait before retrying a busy run when the policy has no delay. */
export const BUSY_RETRY_MS = 30_000;

type Refusal = { kind: "busy" | "refused"; message: string };

/** The API's 403 answers to a re-run are outcomes, not errors; anything else is. */
function refusalOf(err: unknown): Refusal | undefined {
  const e = err as { status?: number; response?: { data?: { message?: unknown } }; message?: string };
  if (e.status !== 403) return undefined;
  const body = e.response?.data?.message;
  const message = typeof body === "string" ? body : (e.message ?? "forbidden");
  // A rate-limit 403 is a retryable error, not a refusal.
  if (/rate limit/i.test(message)) return undefined;
  return { kind: /already running|in progress/i.test(message) ? "busy" : "refused", message };
}

export interface DecisionRequest {
  policy: ActingRerunPolicy;
  /** Why the handler only reports (the operator's setting, `rerun.mode: report`), if it does. */
  report?: string | undefined;
  scope: RerunScope;
  run: RunFacts;
  htmlUrl: string | undefined;
  /** The organisation's admin repository, and the files the policy came from (what a report may show). */
  adminRepo: string;
  policySources: readonly string[] | undefined;
}

/** Read the facts, decide, record the decision and its facts, and carry it out (or schedule it). */
export async function decideAndAct(ops: Ops, req: DecisionRequest): Promise<Outcome> {
  const { policy, scope, run } = req;
  const facts = await gatherFacts(
    { octokit: ops.octokit, store: ops.store, adminRepo: req.adminRepo, policySources: req.policySources },
    policy,
    scope,
    run,
  );
  const decision = decide({ policy, run, ...facts.input });
  // The decision is made exactly as it would be; report mode only changes what is done with it.
  const report = decision.decision === "rerun" ? (req.report ?? ruleReport(policy, decision)) : undefined;
  ops.log.info(
    {
      runId: run.id,
      attempt: run.runAttempt,
      decision: decision.decision,
      reasons: decision.reasons,
      ...(report ? { reportOnly: report } : {}),
    },
    "rerun decision",
  );
  await recordRerunFacts(ops.store, {
    repository: scope.fullName,
    run,
    jobs: facts.jobs,
    logs: facts.tails,
    current: facts.input.current,
    decision: decision.decision,
  });
  await ops.store.audit({
    kind: "rerun_decision",
    source: "rerun",
    details: {
      repository: `${scope.owner}/${scope.repo}`,
      runId: run.id,
      attempt: run.runAttempt,
      ...decision,
      // `mode` is the decision's re-run mode; report mode is named apart from it.
      ...(report ? { reportOnly: report } : {}),
    },
  });
  const task = { ...taskOf(req, decision), withheld: facts.input.withheld !== undefined };
  if (report) return reportOnly(ops, task, report);
  switch (decision.decision) {
    case "skip":
      return { status: "skipped", reason: decision.reasons.join("; ") };
    case "give_up":
      await explainAndReport(ops, task, "gave_up");
      return { status: "done", summary: `not re-run: ${decision.reasons.join("; ")}` };
    case "rerun":
      if (decision.delayMs > 0) {
        // Waiting must not hold a worker: the durable queue brings the task back to onTask.
        const later = { ...task, scheduled: true };
        const key = taskKey(scope.repoId, run.id, run.runAttempt);
        const runAt = new Date(Date.now() + decision.delayMs);
        await ops.scheduler.schedule({ key, runAt, data: later, installationId: ops.installationId });
        await rememberPlan(ops, later, key, runAt);
        return {
          status: "done",
          summary: `re-run of run ${run.id} attempt ${run.runAttempt} scheduled in ${decision.delayMs / 1000}s`,
        };
      }
      return carryOut(ops, task);
  }
}

/** Why a rule in report mode keeps this re-run from being made: the first such rule a transient job matched. */
function ruleReport(policy: ActingRerunPolicy, decision: Decision): string | undefined {
  for (const v of decision.verdicts) {
    if (v.transient && v.rule !== undefined && policy.rules[v.rule]?.mode === "report")
      return `rerun.rules[${v.rule}].mode: report (rule ${v.rule + 1}, matched by ${v.name})`;
  }
  return undefined;
}

/** What a re-run decision would have requested, in words: the check run's action line. */
export function wouldRerunText(task: RerunTask, report: string): string {
  const what =
    task.mode === "workflow"
      ? "the whole workflow"
      : task.mode === "jobs" && task.jobs?.length
        ? `job ${task.jobs[0]!.name} and its dependents alone`
        : "the failed jobs and their dependents";
  const when = task.delayMs > 0 ? ` after ${task.delayMs / 1000}s` : "";
  return `${what}${when} (attempt ${task.run.runAttempt + 1} of ${task.maxAttempts}); nothing was re-run: report only, by ${report}`;
}

/** Report mode: explain what would have been re-run, and request, schedule and spend nothing. */
async function reportOnly(ops: Ops, task: RerunTask, report: string): Promise<Outcome> {
  const text = wouldRerunText(task, report);
  await explainAndReport(ops, task, "would_rerun", text);
  ops.log.info({ runId: task.run.id, attempt: task.run.runAttempt, report }, "re-run reported, not requested");
  return { status: "done", summary: `run ${task.run.id} attempt ${task.run.runAttempt}: would have re-run ${text}` };
}

function taskOf(req: DecisionRequest, decision: Decision): RerunTask {
  const { policy, scope, run } = req;
  return {
    owner: scope.owner,
    repo: scope.repo,
    repoId: scope.repoId,
    run,
    htmlUrl: req.htmlUrl,
    maxAttempts: policy.max_attempts,
    mode: decision.decision === "rerun" ? decision.mode : policy.mode,
    jobs: decision.decision === "rerun" ? decision.jobs : undefined,
    dailyBudget: policy.daily_budget,
    delayMs: decision.decision === "rerun" ? decision.delayMs : 0,
    reasons: decision.reasons,
    verdicts: decision.verdicts,
    tries: 0,
    scheduled: false,
  };
}

/** What asking for a re-run came to: requested (now, or by an attempt that died), or an outcome instead. */
type Asked = { requested: true } | { stop: Outcome };

/** Re-run now (the decision said so): re-check, request, explain. */
export async function carryOut(ops: Ops, task: RerunTask): Promise<Outcome> {
  const ref = { owner: task.owner, repo: task.repo };
  const runLabel = `run ${task.run.id} attempt ${task.run.runAttempt}`;
  const action = actionOf(task);

  // One request per run attempt and try, across retries and replicas. Once the API accepted it,
  // a retry (e.g. the check run write failed) only explains. An attempt killed between the
  // request and its record leaves an intent: the next one reads the run's attempt to tell
  // whether the re-run it asked for happened.
  const asked = await ops.once<Asked>(requestKey(task.repoId, task.run.id, task.run.runAttempt, task.tries), {
    check: async () =>
      (await attemptNow(ops, ref, task)) === task.run.runAttempt + 1 ? { requested: true } : undefined,
    run: () => askForRerun(ops, task, ref),
  });
  if ("stop" in asked.value) return asked.value.stop;
  if (asked.state === "found")
    ops.log.info(
      { runId: task.run.id, attempt: task.run.runAttempt },
      "re-run found already requested before a restart",
    );
  const detail = action === "rerun_job" ? task.jobs?.[0]?.name : undefined;
  await explainAndReport(ops, task, action, detail);
  return {
    status: "done",
    summary: `${runLabel}: ${actionText({ ...task, attempt: task.run.runAttempt, action, detail })}`,
  };
}

async function attemptNow(ops: Ops, ref: { owner: string; repo: string }, task: RerunTask): Promise<number> {
  return (await getRun(ops.octokit, ref, task.run.id)).run_attempt ?? 1;
}

function actionOf(task: RerunTask): ActionTaken {
  if (task.mode === "workflow") return "rerun_workflow";
  return task.mode === "jobs" && task.jobs?.length ? "rerun_job" : "rerun_failed_jobs";
}

/** The request that re-runs what the task says: the whole run, its failed jobs, or one job. */
function rerunRequest(task: RerunTask): { route: string; params: Record<string, number> } {
  const job = task.mode === "jobs" ? task.jobs?.[0] : undefined;
  if (job) return { route: "POST /repos/{owner}/{repo}/actions/jobs/{job_id}/rerun", params: { job_id: job.id } };
  if (task.mode === "workflow")
    return { route: "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", params: { run_id: task.run.id } };
  return {
    route: "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs",
    params: { run_id: task.run.id },
  };
}

/** Ask the API to re-run, unless the run moved on, is superseded or the day's budget is spent. */
async function askForRerun(ops: Ops, task: RerunTask, ref: { owner: string; repo: string }): Promise<Asked> {
  const runLabel = `run ${task.run.id} attempt ${task.run.runAttempt}`;
  // A late or delayed decision must not re-run an attempt it did not judge (someone re-ran by hand).
  const now = await attemptNow(ops, ref, task);
  if (now !== task.run.runAttempt)
    return { stop: { status: "skipped", reason: `${runLabel} was re-run meanwhile (now attempt ${now})` } };
  if (task.scheduled) {
    const stale = supersededReason(task.run, await currentHead(ops.octokit, ref, task.run));
    if (stale) {
      await standDown(ops, task, stale);
      return { stop: { status: "skipped", reason: stale } };
    }
  }
  const slot = `${task.run.id}:${task.run.runAttempt}`;
  if (!(await takeSlot(ops.store, task.repoId, slot, task.dailyBudget))) {
    const stop =
      budgetStop({ daily_budget: task.dailyBudget }, await usedToday(ops.store, task.repoId, task.dailyBudget)) ??
      "budget spent";
    await ops.store.audit({
      kind: "rerun_budget",
      source: "rerun",
      details: {
        repository: `${ref.owner}/${ref.repo}`,
        runId: task.run.id,
        attempt: task.run.runAttempt,
        budget: task.dailyBudget,
      },
    });
    await explainAndReport(ops, { ...task, reasons: [...task.reasons, stop] }, "budget", stop);
    return { stop: { status: "skipped", reason: `${runLabel}: ${stop}` } };
  }
  const { route, params } = rerunRequest(task);
  try {
    // No retries by the client: a retry of a request whose answer was lost is refused ("already
    // running") and would look like someone else's re-run. The handler's retry reads the attempt.
    await ops.octokit.request(route, { ...ref, ...params, request: { retries: 0 } });
  } catch (err) {
    // A network error may hide an accepted request: the intent stays, and the retry reads the
    // run's attempt to tell. A refusal is certain: nothing was re-run.
    const refusal = refusalOf(err);
    if (!refusal) throw err;
    await returnSlot(ops.store, task.repoId, slot);
    return { stop: await handleRefusal(ops, task, refusal) };
  }
  await ops.store.audit({
    kind: "rerun_requested",
    source: "rerun",
    details: {
      repository: `${ref.owner}/${ref.repo}`,
      runId: task.run.id,
      attempt: task.run.runAttempt,
      mode: task.mode,
      ...(task.jobs?.[0] && task.mode === "jobs" ? { job: task.jobs[0].name } : {}),
    },
  });
  ops.log.info({ runId: task.run.id, attempt: task.run.runAttempt, mode: task.mode }, "re-run requested");
  return { requested: true };
}

async function handleRefusal(ops: Ops, task: RerunTask, refusal: Refusal): Promise<Outcome> {
  const runLabel = `run ${task.run.id} attempt ${task.run.runAttempt}`;
  if (refusal.kind === "busy" && task.tries < MAX_BUSY_RETRIES) {
    const waitMs = task.delayMs > 0 ? task.delayMs : BUSY_RETRY_MS;
    const tries = task.tries + 1;
    const key = `${taskKey(task.repoId, task.run.id, task.run.runAttempt)}:busy:${tries}`;
    const later = { ...task, tries, scheduled: true };
    const runAt = new Date(Date.now() + waitMs);
    await ops.scheduler.schedule({ key, runAt, data: later, installationId: ops.installationId });
    await rememberPlan(ops, later, key, runAt);
    ops.log.info({ runId: task.run.id, tries }, "run still running; re-run retried later");
    return { status: "done", summary: `${runLabel}: the API said "${refusal.message}"; retrying in ${waitMs / 1000}s` };
  }
  const detail =
    refusal.kind === "busy" ? `"${refusal.message}" after ${task.tries + 1} tries` : `"${refusal.message}"`;
  await ops.store.audit({
    kind: "rerun_refused",
    source: "rerun",
    details: {
      repository: `${task.owner}/${task.repo}`,
      runId: task.run.id,
      attempt: task.run.runAttempt,
      message: refusal.message,
    },
  });
  await explainAndReport(ops, task, "refused", detail);
  return { status: "skipped", reason: `${runLabel}: the API refused the re-run: ${detail}` };
}
