// Handler `rerun`: re-runs failed workflow runs whose every failure the repository's policy calls
// transient. The decision is `decide()`'s; this module gathers its facts and carries it out.
import { defineHandler, type HandlerContext, type Outcome, type PayloadOf } from "../../src/index.js";
import { claimDecision, idempotencyKey, recordDecision } from "./claim.js";
import { decide, logsToFetch, outOfScope, type RunFacts } from "./decide.js";
import { carryOut, explainAndReport, isRerunTask, type Ops, type RerunTask } from "./execute.js";
import { currentHead, fetchLogs, listJobs, toRunFacts } from "./facts.js";
import { rerunPolicy, type RerunPolicy } from "./policy.js";

type Context = HandlerContext<"workflow_run.completed", RerunPolicy>;
type WorkflowRunPayload = PayloadOf<"workflow_run.completed">;

function opsOf(ctx: Ops): Ops {
  return { octokit: ctx.octokit, store: ctx.store, checks: ctx.checks, scheduler: ctx.scheduler, log: ctx.log, installationId: ctx.installationId };
}

export default defineHandler({
  name: "rerun",
  events: ["workflow_run.completed"],
  policy: rerunPolicy,

  async handle(ctx): Promise<Outcome> {
    if (ctx.action !== "completed") return { status: "skipped", reason: `action "${ctx.action}" is not completed` };
    const policy = ctx.policy;
    if (!policy) return { status: "skipped", reason: "delivery has no repository" };
    const payload = ctx.payload;
    const run = toRunFacts(payload.workflow_run, payload.workflow, payload.repository);

    // Out of scope: decided from the payload alone, nothing read or written.
    const scope = outOfScope(policy, run);
    if (scope) return { status: "skipped", reason: scope };

    const key = idempotencyKey(payload.repository.id, run.id, run.runAttempt);
    if (!(await claimDecision(ctx.store, key, ctx.deliveryId))) {
      return { status: "skipped", reason: `run ${run.id} attempt ${run.runAttempt} was already decided` };
    }
    let outcome: Outcome;
    try {
      outcome = await decideAndAct(ctx, policy, payload, run, key);
    } catch (err) {
      // A failed attempt must not block the retry of this same delivery.
      await ctx.store.release(key);
      throw err;
    }
    await recordDecision(ctx.store, key, ctx.deliveryId, outcome.status);
    return outcome;
  },

  async onTask(ctx): Promise<Outcome> {
    if (!isRerunTask(ctx.data)) return { status: "skipped", reason: `task ${ctx.key} has no re-run data` };
    return carryOut(opsOf(ctx), ctx.data);
  },
});

/** Gather the facts, decide, and carry the decision out (or schedule it). */
async function decideAndAct(ctx: Context, policy: RerunPolicy, payload: WorkflowRunPayload, run: RunFacts, key: string): Promise<Outcome> {
  const ref = { owner: payload.repository.owner.login, repo: payload.repository.name };
  const jobs = await listJobs(ctx.octokit, ref, run.id, run.runAttempt);
  const current = await currentHead(ctx.octokit, ref, run);
  const logs = await fetchLogs(ctx.octokit, ref, logsToFetch(policy, run, jobs));
  const decision = decide({ policy, run, jobs, logs, current });
  ctx.log.info({ runId: run.id, attempt: run.runAttempt, decision: decision.decision, reasons: decision.reasons }, "rerun decision");
  await ctx.store.audit({
    kind: "rerun_decision",
    source: "rerun",
    details: { repository: `${ref.owner}/${ref.repo}`, runId: run.id, attempt: run.runAttempt, ...decision },
  });

  const task: RerunTask = {
    ...ref,
    repoId: payload.repository.id,
    run,
    htmlUrl: payload.workflow_run.html_url,
    maxAttempts: policy.max_attempts,
    mode: policy.mode,
    delayMs: decision.decision === "rerun" ? decision.delayMs : 0,
    reasons: decision.reasons,
    verdicts: decision.verdicts,
    tries: 0,
    scheduled: false,
  };

  switch (decision.decision) {
    case "skip":
      return { status: "skipped", reason: decision.reasons.join("; ") };
    case "give_up":
      await explainAndReport(opsOf(ctx), task, "gave_up");
      return { status: "done", summary: `not re-run: ${decision.reasons.join("; ")}` };
    case "rerun":
      if (decision.delayMs > 0) {
        // Waiting must not hold a worker: the durable queue brings the task back to onTask.
        await ctx.scheduler.schedule({
          key,
          runAt: new Date(Date.now() + decision.delayMs),
          data: { ...task, scheduled: true },
          installationId: ctx.installationId,
        });
        return { status: "done", summary: `re-run of run ${run.id} attempt ${run.runAttempt} scheduled in ${decision.delayMs / 1000}s` };
      }
      return carryOut(opsOf(ctx), task);
  }
}
