// Handler `rerun`: re-runs failed workflow runs whose every failure the repository's policy calls
// transient. The decision is `decide()`'s; this module gathers its facts and carries it out.
import { defineHandler, type HandlerContext, type Outcome } from "../../src/index.js";
import { claimDecision, idempotencyKey, recordDecision } from "./claim.js";
import { decide, logsToFetch, outOfScope, type RunFacts } from "./decide.js";
import { carryOut } from "./execute.js";
import { explainAndReport } from "./history.js";
import { isRerunTask, type Ops, type RerunTask } from "./task.js";
import { currentHead, fetchLogs, getRun, listJobs, toRunFacts } from "./facts.js";
import { delayMs, rerunPolicy, type RerunPolicy } from "./policy.js";
import { usedToday } from "./budget.js";
import { LOG_TAIL_CHARS, recordRerunFacts } from "./record.js";
import { flakePass } from "./flake-execute.js";
import { MERGE_GROUP_EVENT, cancelPlans, rememberPlan } from "./merge-queue.js";
import { scanLog } from "./scan.js";
import { policyWithheld } from "../shared/visibility.js";
import { MatchBudget } from "../../src/index.js";
import { logsReadAhead, readAhead, type ReadAheadLog } from "./read-ahead.js";
import { readNotedLogs, type NotedReads } from "./failed-jobs-noted.js";

interface WorkflowRunPayload {
  workflow_run: Parameters<typeof toRunFacts>[0] & { html_url?: string };
  workflow?: { name?: string; path?: string } | null;
  repository: { id: number; name: string; full_name?: string; owner: { login: string } };
}

// One handler takes two events whose payloads `ctx.name` tells apart at run time.
type Context = HandlerContext<any, RerunPolicy>;

function opsOf(ctx: Ops): Ops {
  return { octokit: ctx.octokit, store: ctx.store, checks: ctx.checks, scheduler: ctx.scheduler, log: ctx.log, installationId: ctx.installationId };
}

export default defineHandler({
  name: "rerun",
  events: ["workflow_run.completed", "workflow_job.completed", "merge_group.destroyed"],
  policy: rerunPolicy,

  async handle(ctx): Promise<Outcome> {
    if (ctx.name === MERGE_GROUP_EVENT) return onGroupDestroyed(ctx);
    if (ctx.name === "workflow_job") return readAhead(ctx);
    if (ctx.action !== "completed") return { status: "skipped", reason: `action "${ctx.action}" is not completed` };
    const policy = ctx.policy;
    if (!policy) return { status: "skipped", reason: "delivery has no repository" };
    const payload = ctx.payload as WorkflowRunPayload;
    const run = toRunFacts(payload.workflow_run, payload.workflow, payload.repository);

    const flakes = await flakesAround(ctx, policy, payload, run);
    // Out of scope: decided from the payload alone, nothing read or written (but the flake pattern).
    const scope = outOfScope(policy, run);
    if (scope) {
      if (run.conclusion && FAILED_RUN.has(run.conclusion)) await recordRerunFacts(ctx.store, { repository: fullNameOf(payload), run, decision: "skip" });
      return withFlakes({ status: "skipped", reason: scope }, flakes);
    }

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
    return withFlakes(outcome, flakes);
  },

  async onTask(ctx): Promise<Outcome> {
    if (!isRerunTask(ctx.data)) return { status: "skipped", reason: `task ${ctx.key} has no re-run data` };
    return carryOut(opsOf(ctx), ctx.data);
  },
});

interface MergeGroupPayload {
  reason?: string;
  merge_group: { head_sha: string; head_ref: string };
  repository: { id: number };
}

async function onGroupDestroyed(ctx: Context): Promise<Outcome> {
  if (ctx.action !== "destroyed") return { status: "skipped", reason: `merge_group action "${ctx.action}" is not destroyed` };
  const payload = ctx.payload as unknown as MergeGroupPayload;
  const group = payload.merge_group;
  return cancelPlans(opsOf(ctx), { repoId: payload.repository.id, headSha: group.head_sha, headRef: group.head_ref, reason: payload.reason ?? "no reason given" });
}

/** The flake pattern's pass over the runs around this one, when the policy asks for it. */
async function flakesAround(ctx: Context, policy: RerunPolicy, payload: WorkflowRunPayload, run: RunFacts): Promise<string[]> {
  if (!policy.flake_pattern || !FLAKE_SCAN_CONCLUSIONS.has(run.conclusion ?? "")) return [];
  if (outOfScope(policy, run, { anyConclusion: true })) return [];
  const scope = { owner: payload.repository.owner.login, repo: payload.repository.name, repoId: payload.repository.id, repository: payload.repository };
  return flakePass(opsOf(ctx), policy, scope, run);
}

/** Failed runs out of scope are recorded too: a policy change may bring them into it. */
const FAILED_RUN = new Set(["failure", "timed_out", "cancelled"]);

function fullNameOf(payload: WorkflowRunPayload): string {
  return payload.repository.full_name ?? `${payload.repository.owner.login}/${payload.repository.name}`;
}

/** A green run can be the C of a flake, a red one its B: both are looked at. */
const FLAKE_SCAN_CONCLUSIONS = new Set(["success", "failure", "timed_out"]);

function withFlakes(outcome: Outcome, flakes: string[]): Outcome {
  if (flakes.length === 0) return outcome;
  const own = outcome.status === "done" ? outcome.summary : outcome.status === "skipped" ? outcome.reason : outcome.error;
  return { status: "done", summary: [...flakes, ...(own ? [own] : [])].join("; ") };
}

/** Gather the facts, decide, and carry the decision out (or schedule it). */
async function decideAndAct(ctx: Context, policy: RerunPolicy, payload: WorkflowRunPayload, run: RunFacts, key: string): Promise<Outcome> {
  const ref = { owner: payload.repository.owner.login, repo: payload.repository.name };
  // The re-run's latency is these round trips end to end, so reads that do not wait for another
  // are asked together, after a first request that goes alone: an exhausted rate limit is then
  // found by one refused request, and the client holds the others back until the reset, instead
  // of each being refused. The first is the log of a failed job noted from its own delivery
  // (failed-jobs-noted.ts) when there is one: a log is two round trips in a row (the API's
  // redirect, then the storage host), the longest path, and the jobs list, the branch and the run
  // then go while the storage host is read. Without a note it is the jobs list, and the logs
  // (first: the longest path), the branch and the run follow it. Without a delay a re-run is
  // carried out at once, and carrying out re-checks the run's attempt: that read goes with these
  // (one read for nothing when the decision is not to re-run). Logs read ahead when their jobs
  // finished (`rerun.read_ahead`, read-ahead.ts) are looked up meanwhile, and one still being
  // read is waited for; a failure to look them up only means reading the logs here.
  const budget = new MatchBudget();
  const specs = policy.rules.flatMap((r) => r.log ?? []);
  // The decision needs only which patterns matched; the facts kept for simulating another policy
  // need the text, of which the tail is enough (errors print last).
  const digest = async (log: string): Promise<ReadAheadLog> => ({ scanned: await scanLog(log, specs, budget), tail: log.slice(-LOG_TAIL_CHARS) });
  const at = { repoId: payload.repository.id, runId: run.id, attempt: run.runAttempt };
  const ahead = policy.read_ahead && specs.length > 0
    ? logsReadAhead(ctx.store, at.repoId, run.id, run.runAttempt, policy).catch(() => new Map<number, ReadAheadLog>())
    : new Map<number, ReadAheadLog>();
  const noted: NotedReads<ReadAheadLog> = !policy.read_ahead && specs.length > 0 ? await readNotedLogs(ctx.store, ctx.octokit, ref, at, policy, digest) : { reads: new Map() };
  const readLogs = async (ids: number[]) => {
    // Nothing read ahead: no turn of the event loop spent waiting for it before the first log read leaves.
    const known = ahead instanceof Map ? ahead : await ahead;
    const got = new Map<number, ReadAheadLog>();
    for (const id of ids) {
      const log = known.get(id) ?? (await noted.reads.get(id));
      if (log) got.set(id, log);
    }
    const read = await fetchLogs(ctx.octokit, ref, ids.filter((id) => !got.has(id)), digest);
    return new Map(ids.map((id) => [id, got.get(id) ?? read.get(id) ?? null] as const));
  };
  if (noted.first) await noted.first;
  const listing = listJobs(ctx.octokit, ref, run.id, run.runAttempt);
  // Without a note the jobs list is the first request: nothing else leaves before it is answered,
  // and a list that fails fails the decision with nothing else asked.
  if (!noted.first) await listing;
  // The run's attempt is for carrying out a re-run at once, not for deciding: the decision (and
  // its writes) go on while it is read, and a failure to read it fails only a re-run.
  const runNow = delayMs(policy) === 0 ? getRun(ctx.octokit, ref, run.id).then((r) => ({ attempt: r.run_attempt ?? 1 })) : undefined;
  // Settles either way: awaited at the handler's end, and a failure meanwhile is not an unhandled one.
  const runNowSettled = runNow?.then(
    () => undefined,
    () => undefined,
  );
  const [{ jobs, read }, current, withheld] = await Promise.all([
    listing.then(async (jobs) => ({ jobs, read: await readLogs(logsToFetch(policy, run, jobs)) })),
    currentHead(ctx.octokit, ref, run),
    policyWithheld(ctx.octokit, { ...ref, adminRepo: ctx.config.adminRepo || ".github", sources: ctx.policySources, fork: Boolean(run.fromFork) }),
  ]);
  const logs = new Map([...read].map(([id, r]) => [id, r && r.scanned] as const));
  const tails = new Map([...read].map(([id, r]) => [id, r && r.tail] as const));
  const decision = decide({ policy, run, jobs, logs, current, usedToday: await usedToday(ctx.store, payload.repository.id, policy.daily_budget), ...(withheld ? { withheld } : {}) });
  ctx.log.info({ runId: run.id, attempt: run.runAttempt, decision: decision.decision, reasons: decision.reasons }, "rerun decision");
  // The facts and the decision's audit record are written while the decision is carried out, so
  // the re-run request does not wait out two more round trips to the store. They start a turn of
  // the event loop later: an embedded store writes on the loop itself, and the request should be
  // on its way first. The handler ends only once both are written: their failure fails it, and
  // its retry finds the re-run marked requested (carryOut) and only explains it.
  const recorded = nextTurn().then(() =>
    Promise.all([
      recordRerunFacts(ctx.store, { repository: fullNameOf(payload), run, jobs, logs: tails, current, decision: decision.decision }),
      ctx.store.audit({
        kind: "rerun_decision",
        source: "rerun",
        details: { repository: `${ref.owner}/${ref.repo}`, runId: run.id, attempt: run.runAttempt, ...decision },
      }),
    ]),
  );
  // Awaited below, once the re-run is carried out: a failure meanwhile is not an unhandled one.
  recorded.catch(() => undefined);
  try {
    return await carryOutDecision(ctx, run, key, decision, taskOf(payload, ref, run, policy, decision), runNow);
  } finally {
    await recorded;
    // Not left in flight past the handler's end when the decision did not need it.
    await runNowSettled;
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

type Decision = ReturnType<typeof decide>;

function taskOf(payload: WorkflowRunPayload, ref: { owner: string; repo: string }, run: RunFacts, policy: RerunPolicy, decision: Decision): RerunTask {
  return {
    ...ref,
    repoId: payload.repository.id,
    run,
    htmlUrl: payload.workflow_run.html_url,
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

async function carryOutDecision(ctx: Context, run: RunFacts, key: string, decision: Decision, task: RerunTask, runNow: Promise<{ attempt: number }> | undefined): Promise<Outcome> {
  switch (decision.decision) {
    case "skip":
      return { status: "skipped", reason: decision.reasons.join("; ") };
    case "give_up":
      await explainAndReport(opsOf(ctx), task, "gave_up");
      return { status: "done", summary: `not re-run: ${decision.reasons.join("; ")}` };
    case "rerun":
      if (decision.delayMs > 0) {
        // Waiting must not hold a worker: the durable queue brings the task back to onTask.
        const later = { ...task, scheduled: true };
        const runAt = new Date(Date.now() + decision.delayMs);
        await ctx.scheduler.schedule({ key, runAt, data: later, installationId: ctx.installationId });
        await rememberPlan(opsOf(ctx), later, key, runAt);
        return { status: "done", summary: `re-run of run ${run.id} attempt ${run.runAttempt} scheduled in ${decision.delayMs / 1000}s` };
      }
      return carryOut(opsOf(ctx), task, runNow);
  }
}
