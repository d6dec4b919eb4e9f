// Acting on the secrets handler's decisions: sync an organisation (or plan it, for a pull
// request's `steward/plan`), report the outcome as a check run, and schedule what comes next (the
// periodic sync, a resumption after a rate limit or behind a sync running elsewhere).
import {
  describeHolder,
  LeaseHeld,
  operatorReportOnly,
  rateLimitWaitMs,
  stoppedError,
  type CheckReport,
  type HandlerContext,
  type Outcome,
  type ServiceContext,
  type TaskContext,
} from "../../src/index.js";
import { asRequester, describeError } from "./api.js";
import { periodicTask, type Decision } from "./decide.js";
import { loadSecretsDocument } from "./document.js";
import { syncOrganisation, type OrganisationOutcome } from "./organisation.js";
import {
  forkPlanNote,
  forkPlanSummary,
  planConclusion,
  planSummary,
  problemsSummary,
  syncConclusion,
  syncSummary,
} from "./report.js";
import { loggedProgress, progressKey } from "./progress.js";

type Delivery = HandlerContext<any, unknown>;
type Ctx = Delivery | TaskContext;

/** A scheduled task's data: the periodic sync, or a sync resumed later. */
export interface TaskData {
  kind: "periodic" | "resume";
  org: string;
  onlyRepos?: string[];
}

function baseUrlOf(octokit: unknown): string {
  const defaults = (octokit as { request?: { endpoint?: { DEFAULTS?: { baseUrl?: string } } } })?.request?.endpoint
    ?.DEFAULTS;
  return defaults?.baseUrl ?? "api";
}

function laneId(ctx: Ctx): string {
  return `${baseUrlOf(ctx.octokit)}#${ctx.installationId ?? "none"}`;
}

/**
 * A check run is how people see the result, but when the API's rate limit refuses it the
 * sync has already happened (and its resumption is scheduled): retrying the delivery would
 * only repeat the sync against the same limit.
 */
async function reportCheck(ctx: Ctx, check: CheckReport): Promise<void> {
  try {
    await ctx.checks.report(check);
  } catch (e) {
    if (rateLimitWaitMs(e) === undefined) throw e;
    ctx.log.warn({ check: check.name, error: describeError(e) }, "check run not reported: rate limited");
  }
}

async function carryOut(
  ctx: Ctx,
  org: string,
  opts: { dryRun?: boolean; ref?: string; onlyRepos?: string[] },
): Promise<OrganisationOutcome> {
  return syncOrganisation({
    api: asRequester(ctx.octokit),
    store: ctx.store,
    org,
    adminRepo: ctx.config.adminRepo,
    dataDir: ctx.config.dataDir,
    laneId: laneId(ctx),
    signal: ctx.signal,
    onProgress: loggedProgress(ctx.log, (p) => ctx.store.set(progressKey(org), p)),
    lease: { who: "the Steward service" },
    ...operatorReport(ctx),
    ...opts,
  });
}

/** STEWARD_MODE=report or STEWARD_REPORT_ONLY naming secrets: every write of every sync only reported. */
function operatorReport(ctx: Ctx): { report?: string } {
  const report = operatorReportOnly(ctx.config, "secrets");
  return report ? { report } : {};
}

/** How long a sync waits for the one running elsewhere before it tries again. */
const LEASE_RETRY_MS = 60_000;

/** A rate limit ended the run early: come back when it lifts (records skip what is done). */
async function scheduleResume(ctx: Ctx, org: string, resumeAt: Date, onlyRepos?: string[]): Promise<void> {
  const data: TaskData = { kind: "resume", org, ...(onlyRepos ? { onlyRepos } : {}) };
  await ctx.scheduler.schedule({
    key: `secrets/resume/${ctx.installationId}/${org.toLowerCase()}`,
    runAt: resumeAt,
    data,
    installationId: ctx.installationId,
    replace: true,
  });
}

export async function schedulePeriodic(
  ctx: { scheduler: ServiceContext["scheduler"]; config: ServiceContext["config"] },
  installationId: number,
  org: string,
): Promise<void> {
  const { key, runAt } = periodicTask(installationId, new Date(), ctx.config.syncIntervalMs);
  const data: TaskData = { kind: "periodic", org };
  await ctx.scheduler.schedule({ key, runAt, data, installationId });
}

export async function sync(ctx: Ctx, decision: Extract<Decision, { decision: "sync" }>): Promise<Outcome> {
  let outcome: OrganisationOutcome;
  try {
    outcome = await carryOut(ctx, decision.org, { ref: decision.report?.headSha, onlyRepos: decision.onlyRepos });
  } catch (e) {
    if (!(e instanceof LeaseHeld)) throw e;
    // Single flight: the sync running elsewhere does this work; this one comes back after it.
    await scheduleResume(ctx, decision.org, new Date(Date.now() + LEASE_RETRY_MS), decision.onlyRepos);
    ctx.log.info({ org: decision.org, holder: e.holder }, "secrets sync already running elsewhere; trying again later");
    return {
      status: "skipped",
      reason: `a sync of ${decision.org} is already running (${describeHolder(e.holder)}); trying again in ${LEASE_RETRY_MS / 1000}s`,
    };
  }
  const report = decision.report;
  if (outcome.status === "no_policy" && report) {
    await reportCheck(ctx, {
      owner: decision.org,
      repo: report.repo,
      headSha: report.headSha,
      name: "steward/sync",
      conclusion: "neutral",
      title: "No secrets policy: nothing synced",
      summary: `${outcome.reason}.`,
    });
  }
  if (outcome.status === "no_admin_repo" || outcome.status === "no_policy")
    return { status: "skipped", reason: outcome.reason };
  if (outcome.status === "invalid") {
    if (report) {
      await reportCheck(ctx, {
        owner: decision.org,
        repo: report.repo,
        headSha: report.headSha,
        name: "steward/sync",
        conclusion: "failure",
        title: "Policy has errors: nothing synced",
        summary: problemsSummary(outcome.problems),
      });
    }
    return {
      status: "skipped",
      reason: `${outcome.file} has ${outcome.problems.filter((p) => p.severity === "error").length} error(s)`,
    };
  }
  const { result } = outcome;
  // Stopped between steps: what was written is recorded; the work goes back to the queue and
  // the next run resumes from there.
  if (result.stopped && ctx.signal.aborted) throw stoppedError(ctx.signal);
  if (result.stopped)
    return {
      status: "skipped",
      reason: `the sync of ${decision.org} was taken over by another run (steward sync --force)`,
    };
  if (result.pausedUntil) await scheduleResume(ctx, decision.org, result.pausedUntil, decision.onlyRepos);
  const { title, summary } = syncSummary(result);
  if (report) {
    await reportCheck(ctx, {
      owner: decision.org,
      repo: report.repo,
      headSha: report.headSha,
      name: "steward/sync",
      conclusion: syncConclusion(result),
      title,
      summary,
    });
  }
  ctx.log.info(
    {
      org: decision.org,
      applied: result.applied.length,
      failures: result.failures.length,
      leftAlone: result.leftAlone.length,
      paused: Boolean(result.pausedUntil),
    },
    "secrets sync",
  );
  return { status: "done", summary: `${decision.org}: ${title}` };
}

export async function plan(ctx: Delivery, decision: Extract<Decision, { decision: "plan" }>): Promise<Outcome> {
  if (decision.fork !== undefined) return forkPlan(ctx, decision, decision.fork);
  const outcome = await carryOut(ctx, decision.org, { dryRun: true, ref: decision.ref });
  const target = { owner: decision.org, repo: decision.repo, headSha: decision.headSha, name: "steward/plan" };
  if (outcome.status === "no_admin_repo") return { status: "skipped", reason: outcome.reason };
  if (outcome.status === "no_policy") {
    await reportCheck(ctx, {
      ...target,
      conclusion: "neutral",
      title: "No secrets policy",
      summary: "The policy file is removed by this pull request: nothing would be synced.",
    });
    return { status: "done", summary: "plan: no policy" };
  }
  if (outcome.status === "invalid") {
    await reportCheck(ctx, {
      ...target,
      conclusion: "failure",
      title: "Policy has errors: no plan",
      summary: problemsSummary(outcome.problems),
    });
    return { status: "done", summary: "plan: policy has errors" };
  }
  const { title, summary } = planSummary(outcome.result);
  await reportCheck(ctx, { ...target, conclusion: planConclusion(outcome.result), title, summary });
  return { status: "done", summary: `plan: ${title}` };
}

/**
 * `steward/plan` for a fork's pull request. Its policy is untrusted: it is validated for structure
 * only, and no plan is computed, since a plan resolves the sources (`env:`, `file:`) on this host
 * and compares values with the fingerprints of what was written, and would show the fork's author
 * what it found. So this output depends on the pull request's text alone, never on the host.
 */
async function forkPlan(
  ctx: Delivery,
  decision: Extract<Decision, { decision: "plan" }>,
  fork: string,
): Promise<Outcome> {
  const target = { owner: decision.org, repo: decision.repo, headSha: decision.headSha, name: "steward/plan" };
  const doc = await loadSecretsDocument(asRequester(ctx.octokit), decision.org, decision.repo, decision.ref, {
    resolveSources: false,
  });
  if (!doc.found) {
    await reportCheck(ctx, {
      ...target,
      conclusion: "neutral",
      title: "No secrets policy",
      summary: "The policy file is removed by this pull request: nothing would be synced.",
    });
    return { status: "done", summary: "plan: no policy" };
  }
  if (!doc.policy) {
    await reportCheck(ctx, {
      ...target,
      conclusion: "failure",
      title: "Policy has errors: no plan",
      summary: `${forkPlanNote(fork)}\n\n${problemsSummary(doc.problems)}`,
    });
    return { status: "done", summary: "plan: policy has errors (fork)" };
  }
  const { title, summary } = forkPlanSummary(fork, `${decision.org}/${decision.repo}`);
  await reportCheck(ctx, { ...target, conclusion: "neutral", title, summary });
  return { status: "done", summary: `plan: not computed for fork ${fork}` };
}
