// The `secrets` handler: keeps an organisation's Actions secrets and variables in line with
// `.github/steward/secrets.yml` in its admin repository. Decisions come from decide.ts; this
// module reads the few facts they need and carries them out.
import { defineHandler, type HandlerContext, type Outcome, type ServiceContext, type TaskContext, type CheckReport } from "../../src/index.js";
import { forkOf, type RepoIdentity } from "../shared/fork.js";
import { groupPull, mergeGroupOf } from "../shared/merge-group.js";
import { asRequester, describeError, rateLimitWaitMs } from "./api.js";
import { decideNewRepositories, decidePullRequest, decidePush, isAdminRepo, periodicTask, PLAN_PULL_REQUEST_ACTIONS, type Decision } from "./decide.js";
import { loadSecretsDocument } from "./document.js";
import { syncOrganisation, type OrganisationOutcome } from "./organisation.js";
import { secretsDocument } from "./policy.js";
import { forkPlanNote, forkPlanSummary, planConclusion, planSummary, problemsSummary, syncConclusion, syncSummary } from "./report.js";
import { loggedProgress, progressKey } from "./progress.js";
import { describeHolder, LeaseHeld } from "../../src/index.js";
import { stoppedError } from "../../src/index.js";
import { changedGithubFiles, type PullCommits } from "../shared/pull-files.js";

type Delivery = HandlerContext<any, unknown>;
type Ctx = Delivery | TaskContext;

interface TaskData {
  kind: "periodic" | "resume";
  org: string;
  onlyRepos?: string[];
}

function baseUrlOf(octokit: unknown): string {
  const defaults = (octokit as { request?: { endpoint?: { DEFAULTS?: { baseUrl?: string } } } })?.request?.endpoint?.DEFAULTS;
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

async function carryOut(ctx: Ctx, org: string, opts: { dryRun?: boolean; ref?: string; onlyRepos?: string[] }): Promise<OrganisationOutcome> {
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
    ...opts,
  });
}

/** How long a sync waits for the one running elsewhere before it tries again. */
const LEASE_RETRY_MS = 60_000;

/** A rate limit ended the run early: come back when it lifts (records skip what is done). */
async function scheduleResume(ctx: Ctx, org: string, resumeAt: Date, onlyRepos?: string[]): Promise<void> {
  const data: TaskData = { kind: "resume", org, ...(onlyRepos ? { onlyRepos } : {}) };
  await ctx.scheduler.schedule({ key: `secrets/resume/${ctx.installationId}/${org.toLowerCase()}`, runAt: resumeAt, data, installationId: ctx.installationId, replace: true });
}

async function schedulePeriodic(ctx: { scheduler: ServiceContext["scheduler"]; config: ServiceContext["config"] }, installationId: number, org: string): Promise<void> {
  const { key, runAt } = periodicTask(installationId, new Date(), ctx.config.syncIntervalMs);
  const data: TaskData = { kind: "periodic", org };
  await ctx.scheduler.schedule({ key, runAt, data, installationId });
}

async function sync(ctx: Ctx, decision: Extract<Decision, { decision: "sync" }>): Promise<Outcome> {
  let outcome: OrganisationOutcome;
  try {
    outcome = await carryOut(ctx, decision.org, { ref: decision.report?.headSha, onlyRepos: decision.onlyRepos });
  } catch (e) {
    if (!(e instanceof LeaseHeld)) throw e;
    // Single flight: the sync running elsewhere does this work; this one comes back after it.
    await scheduleResume(ctx, decision.org, new Date(Date.now() + LEASE_RETRY_MS), decision.onlyRepos);
    ctx.log.info({ org: decision.org, holder: e.holder }, "secrets sync already running elsewhere; trying again later");
    return { status: "skipped", reason: `a sync of ${decision.org} is already running (${describeHolder(e.holder)}); trying again in ${LEASE_RETRY_MS / 1000}s` };
  }
  const report = decision.report;
  if (outcome.status === "no_policy" && report) {
    await reportCheck(ctx, { owner: decision.org, repo: report.repo, headSha: report.headSha, name: "steward/sync", conclusion: "neutral", title: "No secrets policy: nothing synced", summary: `${outcome.reason}.` });
  }
  if (outcome.status === "no_admin_repo" || outcome.status === "no_policy") return { status: "skipped", reason: outcome.reason };
  if (outcome.status === "invalid") {
    if (report) {
      await reportCheck(ctx, { owner: decision.org, repo: report.repo, headSha: report.headSha, name: "steward/sync", conclusion: "failure", title: "Policy has errors: nothing synced", summary: problemsSummary(outcome.problems) });
    }
    return { status: "skipped", reason: `${outcome.file} has ${outcome.problems.filter((p) => p.severity === "error").length} error(s)` };
  }
  const { result } = outcome;
  // Stopped between steps: what was written is recorded; the work goes back to the queue and
  // the next run resumes from there.
  if (result.stopped && ctx.signal.aborted) throw stoppedError(ctx.signal);
  if (result.stopped) return { status: "skipped", reason: `the sync of ${decision.org} was taken over by another run (steward sync --force)` };
  if (result.pausedUntil) await scheduleResume(ctx, decision.org, result.pausedUntil, decision.onlyRepos);
  const { title, summary } = syncSummary(result);
  if (report) {
    await reportCheck(ctx, { owner: decision.org, repo: report.repo, headSha: report.headSha, name: "steward/sync", conclusion: syncConclusion(result), title, summary });
  }
  ctx.log.info({ org: decision.org, applied: result.applied.length, failures: result.failures.length, leftAlone: result.leftAlone.length, paused: Boolean(result.pausedUntil) }, "secrets sync");
  return { status: "done", summary: `${decision.org}: ${title}` };
}

async function plan(ctx: Delivery, decision: Extract<Decision, { decision: "plan" }>): Promise<Outcome> {
  if (decision.fork !== undefined) return forkPlan(ctx, decision, decision.fork);
  const outcome = await carryOut(ctx, decision.org, { dryRun: true, ref: decision.ref });
  const target = { owner: decision.org, repo: decision.repo, headSha: decision.headSha, name: "steward/plan" };
  if (outcome.status === "no_admin_repo") return { status: "skipped", reason: outcome.reason };
  if (outcome.status === "no_policy") {
    await reportCheck(ctx, { ...target, conclusion: "neutral", title: "No secrets policy", summary: "The policy file is removed by this pull request: nothing would be synced." });
    return { status: "done", summary: "plan: no policy" };
  }
  if (outcome.status === "invalid") {
    await reportCheck(ctx, { ...target, conclusion: "failure", title: "Policy has errors: no plan", summary: problemsSummary(outcome.problems) });
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
async function forkPlan(ctx: Delivery, decision: Extract<Decision, { decision: "plan" }>, fork: string): Promise<Outcome> {
  const target = { owner: decision.org, repo: decision.repo, headSha: decision.headSha, name: "steward/plan" };
  const doc = await loadSecretsDocument(asRequester(ctx.octokit), decision.org, decision.repo, decision.ref, { resolveSources: false });
  if (!doc.found) {
    await reportCheck(ctx, { ...target, conclusion: "neutral", title: "No secrets policy", summary: "The policy file is removed by this pull request: nothing would be synced." });
    return { status: "done", summary: "plan: no policy" };
  }
  if (!doc.policy) {
    await reportCheck(ctx, { ...target, conclusion: "failure", title: "Policy has errors: no plan", summary: `${forkPlanNote(fork)}\n\n${problemsSummary(doc.problems)}` });
    return { status: "done", summary: "plan: policy has errors (fork)" };
  }
  const { title, summary } = forkPlanSummary(fork, `${decision.org}/${decision.repo}`);
  await reportCheck(ctx, { ...target, conclusion: "neutral", title, summary });
  return { status: "done", summary: `plan: not computed for fork ${fork}` };
}

/** The file names (and former names) a pull request changes under `.github/`, where the secrets document is. */
async function pullRequestFiles(ctx: Delivery, pull: PullCommits): Promise<string[]> {
  return (await changedGithubFiles(ctx.octokit, pull)).flatMap((f) => (f.previous_filename ? [f.filename, f.previous_filename] : [f.filename]));
}

/** `steward/plan` on a merge group's head: the plan of the pull request it names, at the group's head. */
async function decideMergeGroup(ctx: Delivery, adminRepo: string): Promise<Decision> {
  const group = mergeGroupOf(ctx.payload as never);
  if ("skip" in group) return { decision: "skip", reasons: [group.skip] };
  if (!isAdminRepo(adminRepo, group.owner, group.repo)) return { decision: "skip", reasons: [`${group.owner}/${group.repo} is not the admin repository`] };
  const pull = await groupPull(ctx.octokit, group);
  const fork = forkOf(pull.head.repo, (ctx.payload as { repository?: RepoIdentity }).repository);
  const facts = { action: "checks_requested", owner: group.owner, repo: group.repo, number: group.number, headSha: group.headSha, headRef: pull.head.ref, baseRef: group.baseRef, defaultBranch: (ctx.payload as any).repository.default_branch, ...(fork === null ? {} : { fork: fork ?? "(unknown head repository)" }) };
  const decision = decidePullRequest({ ...facts, files: await pullRequestFiles(ctx, { owner: group.owner, repo: group.repo, number: group.number }) }, adminRepo);
  return decision.decision === "need_files" ? { decision: "skip", reasons: ["files unknown"] } : decision;
}

async function decideDelivery(ctx: Delivery): Promise<Decision> {
  const adminRepo = ctx.config.adminRepo;
  // The payload is read in the cases that need it: the engine parses it on first read, and most
  // pull request actions are not triggers (told from the event alone).
  switch (`${ctx.name}.${ctx.action ?? ""}`.replace(/\.$/, "")) {
    case "push": {
      const p = ctx.payload as any;
      return decidePush(
        { ref: p.ref, after: p.after, deleted: p.deleted === true, defaultBranch: p.repository.default_branch ?? p.repository.master_branch, owner: p.repository.owner.login ?? p.repository.owner.name, repo: p.repository.name, commits: p.commits ?? [] },
        adminRepo,
      );
    }
    case "pull_request.opened":
    case "pull_request.synchronize":
    case "pull_request.reopened":
    case "pull_request.edited": {
      const p = ctx.payload as any;
      // A head repository that is not this one, or that the payload cannot place, is untrusted.
      const fork = forkOf(p.pull_request.head.repo, p.repository);
      const facts = {
        action: ctx.action!,
        owner: p.repository.owner.login,
        repo: p.repository.name,
        number: p.pull_request.number,
        headSha: p.pull_request.head.sha,
        headRef: p.pull_request.head.ref,
        baseRef: p.pull_request.base.ref,
        defaultBranch: p.repository.default_branch,
        ...(fork === null ? {} : { fork: fork ?? "(unknown head repository)" }),
      };
      const first = decidePullRequest(facts, adminRepo);
      if (first.decision !== "need_files") return first;
      const files = await pullRequestFiles(ctx, { owner: facts.owner, repo: facts.repo, number: facts.number, headSha: facts.headSha, baseSha: p.pull_request.base.sha });
      const second = decidePullRequest({ ...facts, files }, adminRepo);
      return second.decision === "need_files" ? { decision: "skip", reasons: ["files unknown"] } : second;
    }
    case "merge_group.checks_requested":
      return decideMergeGroup(ctx, adminRepo);
    case "repository.created": {
      const p = ctx.payload as any;
      return decideNewRepositories(p.repository.owner.login, [p.repository.name], "repository.created");
    }
    case "installation_repositories.added": {
      const p = ctx.payload as any;
      return decideNewRepositories(p.installation.account.login, (p.repositories_added ?? []).map((r: { name: string }) => r.name), "installation_repositories.added");
    }
    case "installation.created":
      return { decision: "sync", org: (ctx.payload as any).installation.account.login, reasons: ["installation.created"] };
    default:
      return { decision: "skip", reasons: [`${ctx.name}.${ctx.action} is not a secrets trigger`] };
  }
}

/** Events that concern the secrets policy only in the admin repository, where its documents live. */
const ADMIN_REPOSITORY_EVENTS = new Set(["push", "pull_request", "merge_group"]);

export default defineHandler({
  name: "secrets",
  events: [
    "push",
    ...PLAN_PULL_REQUEST_ACTIONS.map((action) => `pull_request.${action}` as const),
    "merge_group.checks_requested",
    "repository.created",
    "installation.created",
    "installation_repositories.added",
  ],
  // A push, pull request or merge group elsewhere than the admin repository is never a trigger
  // (decide.ts): such a delivery, most of an organisation's pushes, is settled at the intake.
  takes(delivery, config) {
    if (!ADMIN_REPOSITORY_EVENTS.has(delivery.event) || delivery.repository === undefined) return true;
    const slash = delivery.repository.indexOf("/");
    if (slash <= 0) return true;
    return isAdminRepo(config.adminRepo, delivery.repository.slice(0, slash), delivery.repository.slice(slash + 1));
  },
  documents: [secretsDocument],

  async handle(ctx) {
    const decision = await decideDelivery(ctx);
    if (decision.decision === "skip") return { status: "skipped", reason: decision.reasons.join("; ") };
    if (decision.decision === "plan") return plan(ctx, decision);
    const event: string = ctx.name;
    if (event === "installation" && ctx.installationId) await schedulePeriodic(ctx, ctx.installationId, decision.org);
    return sync(ctx, decision);
  },

  async onTask(ctx) {
    const data = ctx.data as TaskData;
    // Schedule the next period first: a failing sync must not end the schedule.
    if (data.kind === "periodic" && ctx.installationId) await schedulePeriodic(ctx, ctx.installationId, data.org);
    return sync(ctx, { decision: "sync", org: data.org, onlyRepos: data.onlyRepos, reasons: [data.kind] });
  },

  async start(ctx) {
    const app = await ctx.appOctokit();
    for (let page = 1; page <= 100; page++) {
      const res = await app.request("GET /app/installations", { per_page: 100, page });
      for (const inst of res.data) {
        if (inst.suspended_at || !inst.account) continue;
        const account = inst.account as { login?: string; slug?: string };
        const login = account.login ?? account.slug;
        if (login) await schedulePeriodic(ctx, inst.id, login);
      }
      if (res.data.length < 100) break;
    }
  },
});
