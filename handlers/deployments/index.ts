// The `deployments` handler: a policy decides, per environment, whether a deployment may proceed.
// It answers as a custom deployment protection rule (installation token) or, when a reviewer
// token is configured, as a required reviewer of pending deployments.
import {
  defineHandler,
  operatorReportOnly,
  type HandlerContext,
  type HandlerModule,
  type InstallationOctokit,
  type Outcome,
  type TaskContext,
  type StewardConfig,
} from "../../src/index.js";
import { listPendingDeployments, reviewerOctokitFrom } from "./answer.js";
import { matchEnvironment } from "./decide.js";
import {
  mayRunForkCode,
  protectionRequest,
  repoOf,
  reviewAudit,
  settledBy,
  waitingRun,
  type Settled,
  type WaitingRun,
} from "./events.js";
import { fetchPropertyValues, fetchRun } from "./facts.js";
import { gateFindings, gatesFor, type OrgGate } from "./org-gates.js";
import { runGate, type GateServices } from "./execute.js";
import { policyWithheld } from "../shared/visibility.js";
import { deploymentsSection, type DeploymentsPolicy } from "./policy.js";
import { simulateDeployments } from "./simulate.js";
import { deploymentsConsole } from "./console.js";
import { allWaits, taskKey, waitKey, waitsForSha, waitsOn, type Gate, type WaitRecord } from "./waits.js";

export interface DeploymentsOptions {
  /** The clock decisions are made by (default: Steward's, `ctx.now()`, which in the sandbox is the hub's). */
  now?: () => Date;
  /** The required reviewer's Octokit (default: built from STEWARD_REVIEWER_TOKEN against the API URL). */
  reviewerOctokit?: (config: Readonly<StewardConfig>) => InstallationOctokit | undefined;
}

type Ctx = HandlerContext<any, DeploymentsPolicy> | TaskContext<DeploymentsPolicy>;

/** Several outcomes of one delivery as one: failed if any failed, done if any acted, else skipped. */
function combine(outcomes: Outcome[], nothing: string): Outcome {
  const failed = outcomes.find((o) => o.status === "failed");
  if (failed) return failed;
  const done = outcomes.filter((o): o is Extract<Outcome, { status: "done" }> => o.status === "done");
  if (done.length) return { status: "done", summary: done.map((o) => o.summary).join("\n") };
  const reasons = outcomes
    .filter((o): o is Extract<Outcome, { status: "skipped" }> => o.status === "skipped")
    .map((o) => o.reason);
  return { status: "skipped", reason: reasons.length ? reasons.join("\n") : nothing };
}

export function createDeploymentsHandler(options: DeploymentsOptions = {}): HandlerModule<DeploymentsPolicy> {
  const reviewerFor = options.reviewerOctokit ?? reviewerOctokitFrom;
  // One reviewer client for the process: its throttling state must be shared across deliveries.
  let reviewer: { config: Readonly<StewardConfig>; octokit: InstallationOctokit | undefined } | undefined;
  const reviewerOf = (config: Readonly<StewardConfig>) => {
    if (reviewer?.config !== config) reviewer = { config, octokit: reviewerFor(config) };
    return reviewer.octokit;
  };
  /** The organisation policy's gates for this repository's environment, from its custom properties. */
  async function orgGates(ctx: Ctx, owner: string, repo: string, environment: string): Promise<OrgGate[]> {
    // The admin repository's own policy is the organisation policy: a repository file cannot replace its gates.
    const orgPolicy = await ctx.loadPolicy({ owner, repo: ctx.config.adminRepo });
    if (!orgPolicy?.by_property?.length) return [];
    return gatesFor(orgPolicy, await fetchPropertyValues(ctx.octokit, { owner, repo }), environment);
  }
  /** Whether Steward answers for this environment: the repository's policy or an organisation gate names it. */
  async function governs(
    ctx: Ctx,
    policy: DeploymentsPolicy | undefined,
    owner: string,
    repo: string,
    environment: string,
  ): Promise<boolean> {
    return !!matchEnvironment(policy, environment) || (await orgGates(ctx, owner, repo, environment)).length > 0;
  }
  const services = (ctx: Ctx): GateServices => ({
    get octokit() {
      return ctx.octokit;
    },
    reviewer: reviewerOf(ctx.config),
    store: ctx.store,
    once: ctx.once,
    scheduler: ctx.scheduler,
    log: ctx.log,
    now: options.now ?? (() => ctx.now()),
    withheld: (gate) =>
      policyWithheld(ctx.octokit, {
        owner: gate.owner,
        repo: gate.repo,
        adminRepo: ctx.config.adminRepo || ".github",
        sources: "policySources" in ctx ? ctx.policySources : undefined,
      }),
    adminRepo: ctx.config.adminRepo,
    orgGates: (owner, repo, environment) => orgGates(ctx, owner, repo, environment),
    operatorReport: operatorReportOnly(ctx.config, "deployments"),
  });

  async function onProtectionRule(ctx: HandlerContext<any, DeploymentsPolicy>): Promise<Outcome> {
    const request = protectionRequest(ctx.payload);
    if (!request)
      return { status: "skipped", reason: "deployment_protection_rule delivery without environment or run id" };
    if (!(await governs(ctx, ctx.policy, request.owner, request.repo, request.environment))) {
      return { status: "skipped", reason: `no deployments policy matches environment ${request.environment}` };
    }
    let { sha, ref } = request;
    let fork: string | undefined;
    if (!sha || !ref || mayRunForkCode(request.event)) {
      // Older payloads carry neither sha nor ref, and none says whose code a pull request's run
      // checked out (a fork may name its branch `main`): the run knows.
      const run = await fetchRun(ctx.octokit, request);
      sha ??= run.headSha;
      ref ??= run.headBranch;
      fork = run.fork ?? undefined;
    }
    const gate: Gate = {
      path: "rule",
      owner: request.owner,
      repo: request.repo,
      runId: request.runId,
      environment: request.environment,
      installationId: ctx.installationId,
    };
    return runGate(services(ctx), ctx.policy, { gate, sha, ref, fork, requestedAt: request.requestedAt });
  }

  async function onWaitingRun(
    ctx: Ctx,
    policy: DeploymentsPolicy | undefined,
    run: WaitingRun,
    only?: string,
  ): Promise<Outcome> {
    const svc = services(ctx);
    if (!svc.reviewer) return { status: "skipped", reason: "no reviewer token configured (STEWARD_REVIEWER_TOKEN)" };
    let { sha, ref, fork } = run;
    if (!sha || fork === undefined) {
      // A `workflow_job` delivery says neither whose code the run runs nor always its sha.
      const facts = await fetchRun(ctx.octokit, run);
      if (!sha) sha = facts.headSha;
      ref ??= facts.headBranch;
      fork = facts.fork;
    }
    const pending = await listPendingDeployments(svc.reviewer, run);
    const outcomes: Outcome[] = [];
    for (const p of pending) {
      if (only !== undefined && p.environment.toLowerCase() !== only.toLowerCase()) continue;
      if (!(await governs(ctx, policy, run.owner, run.repo, p.environment))) {
        outcomes.push({ status: "skipped", reason: `no deployments policy matches environment ${p.environment}` });
        continue;
      }
      if (!p.currentUserCanApprove) {
        outcomes.push({ status: "skipped", reason: `the reviewer token may not approve ${p.environment}` });
        continue;
      }
      const gate: Gate = {
        path: "review",
        owner: run.owner,
        repo: run.repo,
        runId: run.runId,
        environment: p.environment,
        environmentId: p.environmentId,
        installationId: ctx.installationId,
      };
      outcomes.push(await runGate(svc, policy, { gate, sha, ref, fork: fork ?? undefined }));
    }
    return combine(outcomes, `no pending deployment of run ${run.runId} for Steward to review`);
  }

  /** Re-evaluate a waiting gate (after a check completed, or when its task is due). */
  async function reevaluate(ctx: Ctx, policy: DeploymentsPolicy | undefined, record: WaitRecord): Promise<Outcome> {
    const { gate } = record;
    if (gate.path === "review") {
      // Re-list: the deployment may have been reviewed by a person or the run cancelled meanwhile.
      // Only a run of the repository's own code ever waits (a fork's is rejected at once).
      const outcome = await onWaitingRun(
        ctx,
        policy,
        { owner: gate.owner, repo: gate.repo, runId: gate.runId, sha: record.sha, ref: record.ref, fork: null },
        gate.environment,
      );
      if (outcome.status === "skipped") await ctx.store.delete(waitKey(gate, record.sha));
      return outcome;
    }
    return runGate(services(ctx), policy, { gate, sha: record.sha, ref: record.ref });
  }

  async function onSettled(ctx: HandlerContext<any, DeploymentsPolicy>, settled: Settled): Promise<Outcome> {
    const repo = repoOf(ctx.payload);
    if (!repo) return { status: "skipped", reason: "delivery without repository" };
    const { sha } = settled;
    // Only the waits on what finished are evaluated again: a commit's other checks cost nothing.
    const waits = (await waitsForSha(ctx.store, repo.owner, repo.repo, sha)).filter((w) => waitsOn(w, settled));
    const outcomes: Outcome[] = [];
    for (const record of waits) outcomes.push(await reevaluate(ctx, ctx.policy, record));
    const what = settled.check ?? settled.environment;
    return combine(outcomes, `no deployment waits on ${what ? `${what} for ` : ""}${sha.slice(0, 7)}`);
  }

  return defineHandler<DeploymentsPolicy>({
    name: "deployments",
    events: [
      "deployment_protection_rule.requested",
      "deployment_review",
      // A run waiting for review is never `completed`; a waiting job comes as `waiting` (or `queued`).
      "workflow_run.requested",
      "workflow_run.in_progress",
      "workflow_job.queued",
      "workflow_job.waiting",
      "check_run.completed",
      "check_suite.completed",
      "deployment_status",
    ],
    policy: {
      ...deploymentsSection,
      // In steward/config: where a repository file tries to loosen an organisation gate.
      async review({ org, own, octokit, repository }) {
        if (!org.by_property?.length) return [];
        return gateFindings(org, own, await fetchPropertyValues(octokit, repository));
      },
    },
    simulate: simulateDeployments,
    console: deploymentsConsole,
    // Runs and jobs are taken only to answer a run waiting for review, as its required reviewer:
    // without a reviewer (no STEWARD_REVIEWER_TOKEN) none is ever acted on, and every one of them
    // (each run and job of every workflow, requested, queued, in progress) is settled at the intake.
    takes(delivery, config) {
      if (delivery.event !== "workflow_run" && delivery.event !== "workflow_job") return true;
      return reviewerOf(config) !== undefined;
    },

    async handle(ctx) {
      if (ctx.name === "deployment_protection_rule") return onProtectionRule(ctx);
      if (ctx.name === "deployment_review" && ctx.action !== "requested") {
        await ctx.store.audit({
          kind: "deployment_review",
          source: "deployments",
          details: reviewAudit(ctx.action, ctx.payload),
        });
        return { status: "done", summary: `recorded deployment review (${ctx.action})` };
      }
      const run = waitingRun(ctx.name, ctx.action, ctx.payload);
      if (run) {
        if (ctx.name === "deployment_review") {
          await ctx.store.audit({
            kind: "deployment_review",
            source: "deployments",
            details: reviewAudit(ctx.action, ctx.payload),
          });
        }
        return onWaitingRun(ctx, ctx.policy, run);
      }
      const settled = settledBy(ctx.name, ctx.action, ctx.payload);
      if (settled) return onSettled(ctx, settled);
      return { status: "skipped", reason: `nothing to do for ${ctx.name}${ctx.action ? `.${ctx.action}` : ""}` };
    },

    async start(ctx) {
      // Whatever happened while Steward was down (checks completed, windows opened, the clock
      // moved on) is caught up by re-evaluating every wait now rather than at its old time.
      const waits = await allWaits(ctx.store);
      for (const { key, record } of waits) {
        await ctx.scheduler.schedule({
          // The key the wait's own task has (execute.ts): this one replaces it rather than adding a second.
          key: taskKey(record.gate),
          runAt: new Date(),
          data: { waitKey: key },
          installationId: record.gate.installationId,
          replace: true,
        });
      }
      if (waits.length) ctx.log.info({ waits: waits.length }, "re-evaluating deployments that wait");
    },

    async onTask(ctx) {
      const key = (ctx.data as { waitKey?: string } | undefined)?.waitKey;
      const record = key ? await ctx.store.get<WaitRecord>(key) : undefined;
      if (!record) return { status: "skipped", reason: "the deployment was answered or no longer waits" };
      const policy = await ctx.loadPolicy({ owner: record.gate.owner, repo: record.gate.repo });
      return reevaluate(ctx, policy, record);
    },
  });
}

export default createDeploymentsHandler();
