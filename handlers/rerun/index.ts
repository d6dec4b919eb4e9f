// Handler `rerun`: re-runs failed workflow runs whose every failure the repository's policy calls
// transient. Facts are read in facts.ts, the decision is decide.ts's, execute.ts carries it out.
import { defineHandler, operatorReportOnly, reportReason, type HandlerContext, type Outcome } from "../../src/index.js";
import { outOfScope, type RunFacts } from "./decide.js";
import { carryOut, decideAndAct } from "./execute.js";
import { isRerunTask, opsOf, type RerunScope } from "./task.js";
import { toRunFacts } from "./facts.js";
import { actingPolicy, rerunPolicy, type ActingRerunPolicy, type RerunPolicy } from "./policy.js";
import { recordRerunFacts } from "./record.js";
import { flakePass } from "./flake-execute.js";
import { MERGE_GROUP_EVENT, cancelPlans } from "./merge-queue.js";
import { decisionKey } from "./keys.js";
import { simulateRerun } from "./simulate.js";
import { flakesCommand } from "./commands.js";
import { rerunConsole } from "./console.js";

interface WorkflowRunPayload {
  workflow_run: Parameters<typeof toRunFacts>[0] & { html_url?: string };
  workflow?: { name?: string; path?: string } | null;
  repository: { id: number; name: string; full_name?: string; owner: { login: string } };
}

interface MergeGroupPayload {
  reason?: string;
  merge_group: { head_sha: string; head_ref: string };
  repository: { id: number };
}

// One handler takes two events whose payloads `ctx.name` tells apart at run time.
type Context = HandlerContext<any, RerunPolicy>;

/** Failed runs out of scope are recorded too: a policy change may bring them into it. */
const FAILED_RUN = new Set(["failure", "timed_out", "cancelled"]);

/** A green run can be the C of a flake, a red one its B: both are looked at. */
const FLAKE_SCAN_CONCLUSIONS = new Set(["success", "failure", "timed_out"]);

export default defineHandler({
  name: "rerun",
  events: ["workflow_run.completed", "merge_group.destroyed"],
  policy: rerunPolicy,
  simulate: simulateRerun,
  commands: [flakesCommand],
  console: rerunConsole,

  async handle(ctx): Promise<Outcome> {
    if (ctx.name === MERGE_GROUP_EVENT) return onGroupDestroyed(ctx);
    if (ctx.action !== "completed") return { status: "skipped", reason: `action "${ctx.action}" is not completed` };
    if (!ctx.policy) return { status: "skipped", reason: "delivery has no repository" };
    // Report mode (the operator's setting or `rerun.mode: report`) decides as `failed_jobs` would.
    const { policy, report: sectionReport } = actingPolicy(ctx.policy);
    const report = reportReason(operatorReportOnly(ctx.config, "rerun"), sectionReport);
    const payload = ctx.payload as WorkflowRunPayload;
    const run = toRunFacts(payload.workflow_run, payload.workflow, payload.repository);
    const scope = scopeOf(payload);

    const flakes = await flakesAround(ctx, policy, scope, run, report);
    // Out of scope: decided from the payload alone, nothing read or written (but the flake pattern).
    const outside = outOfScope(policy, run);
    if (outside) {
      if (run.conclusion && FAILED_RUN.has(run.conclusion))
        await recordRerunFacts(ctx.store, { repository: scope.fullName, run, decision: "skip" });
      return withFlakes({ status: "skipped", reason: outside }, flakes);
    }

    // At most one decision per run attempt, across redeliveries, duplicate deliveries and replicas.
    // A failed attempt records nothing: its retry decides again (carrying out re-checks the run's
    // attempt, so a re-run requested just before a crash is not requested twice).
    const decided = await ctx.once(decisionKey(scope.repoId, run.id, run.runAttempt), {
      run: () =>
        decideAndAct(opsOf(ctx), {
          policy,
          scope,
          run,
          htmlUrl: payload.workflow_run.html_url,
          adminRepo: ctx.config.adminRepo || ".github",
          policySources: ctx.policySources,
          report,
        }),
    });
    if (decided.state === "recorded")
      return withFlakes(
        { status: "skipped", reason: `run ${run.id} attempt ${run.runAttempt} was already decided` },
        flakes,
      );
    return withFlakes(decided.value, flakes);
  },

  async onTask(ctx): Promise<Outcome> {
    if (!isRerunTask(ctx.data)) return { status: "skipped", reason: `task ${ctx.key} has no re-run data` };
    return carryOut(opsOf(ctx), ctx.data);
  },
});

function scopeOf(payload: WorkflowRunPayload): RerunScope {
  const { repository } = payload;
  return {
    owner: repository.owner.login,
    repo: repository.name,
    repoId: repository.id,
    fullName: repository.full_name ?? `${repository.owner.login}/${repository.name}`,
    repository,
  };
}

async function onGroupDestroyed(ctx: Context): Promise<Outcome> {
  if (ctx.action !== "destroyed")
    return { status: "skipped", reason: `merge_group action "${ctx.action}" is not destroyed` };
  const payload = ctx.payload as unknown as MergeGroupPayload;
  const group = payload.merge_group;
  return cancelPlans(opsOf(ctx), {
    repoId: payload.repository.id,
    headSha: group.head_sha,
    headRef: group.head_ref,
    reason: payload.reason ?? "no reason given",
  });
}

/** The flake pattern's pass over the runs around this one, when the policy asks for it. */
async function flakesAround(
  ctx: Context,
  policy: ActingRerunPolicy,
  scope: RerunScope,
  run: RunFacts,
  report: string | undefined,
): Promise<string[]> {
  if (!policy.flake_pattern || !FLAKE_SCAN_CONCLUSIONS.has(run.conclusion ?? "")) return [];
  if (outOfScope(policy, run, { anyConclusion: true })) return [];
  return flakePass(opsOf(ctx), policy, scope, run, report);
}

function withFlakes(outcome: Outcome, flakes: string[]): Outcome {
  if (flakes.length === 0) return outcome;
  const own =
    outcome.status === "done" ? outcome.summary : outcome.status === "skipped" ? outcome.reason : outcome.error;
  return { status: "done", summary: [...flakes, ...(own ? [own] : [])].join("; ") };
}
