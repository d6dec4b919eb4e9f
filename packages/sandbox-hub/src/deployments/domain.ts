// Environments, deployments and their statuses, and the gates that hold a workflow job
// bound to a protected environment: required reviewers and custom deployment protection
// rule apps (deployment_review / deployment_protection_rule deliveries, callbacks, 30-day timeout).
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { EffectsLog } from "../core/effects.js";
import { gateOutcome, mayReview, type RuleState } from "./rules.js";
import {
  ACTIONS_APP_ID,
  appJson,
  botSender,
  type DeliveryQueue,
  deliverRepoEvent,
  findRepo,
  repoApi,
  repoHtml,
} from "../core/shared.js";

export interface Environment {
  id: number;
  node_id: string;
  repoId: number;
  name: string;
  created_at: string;
  updated_at: string;
  wait_timer: number;
  prevent_self_review: boolean;
  /** Required reviewers, by login. */
  reviewers: string[];
  /** Custom deployment protection rules: one per app. */
  protectionRules: { id: number; appId: number }[];
  deployment_branch_policy: { protected_branches: boolean; custom_branch_policies: boolean } | null;
}

export interface DeploymentStatus {
  id: number;
  node_id: string;
  state: "error" | "failure" | "inactive" | "in_progress" | "queued" | "pending" | "success" | "waiting";
  description: string;
  environment: string;
  created_at: string;
  updated_at: string;
  log_url: string;
}

export interface Deployment {
  id: number;
  node_id: string;
  repoId: number;
  sha: string;
  ref: string;
  task: string;
  environment: string;
  description: string | null;
  creator: string | null;
  created_at: string;
  updated_at: string;
  statuses: DeploymentStatus[];
  runId: number | null;
  jobId: number | null;
}

export interface Gate {
  id: number;
  repoId: number;
  runId: number;
  attempt: number;
  jobId: number;
  jobName: string;
  envId: number;
  deploymentId: number;
  createdAtMs: number;
  waitUntilMs: number;
  reviewers: string[];
  review: { state: RuleState; by: string | null; comment: string | null; at: string | null };
  rules: Map<number, { state: RuleState; comments: string[]; decidedAt: string | null }>;
  outcome: "pending" | "approved" | "rejected" | "timed_out" | "cancelled";
}

export interface ReviewRecord {
  runId: number;
  environment: string;
  state: "approved" | "rejected";
  by: string;
  comment: string;
  at: string;
}

/** What the actions domain hands over when a job bound to an environment is about to start. */
export interface JobAtGate {
  repo: Repo;
  runId: number;
  attempt: number;
  jobId: number;
  jobName: string;
  environment: string;
  sha: string;
  ref: string;
  event: string;
  actor: string;
}

/** The actions domain's side of a gate: run/job JSON for payloads, and what to do when it closes. */
export interface GateListener {
  workflowRunJson(runId: number): Record<string, unknown>;
  workflowJobJson(jobId: number): Record<string, unknown>;
  gateOpened(gate: Gate): void;
  gateClosed(gate: Gate, state: "rejected" | "timed_out", reason: string): void;
}

export class DeploymentsDomain {
  readonly environments = new Map<number, Environment>();
  readonly deployments = new Map<number, Deployment>();
  readonly gates = new Map<number, Gate>();
  readonly reviews: ReviewRecord[] = [];
  private listener: GateListener | undefined;

  constructor(
    private readonly hub: Hub,
    private readonly effects: EffectsLog,
    private readonly deliveries: DeliveryQueue,
  ) {}

  attach(listener: GateListener): void {
    this.listener = listener;
  }

  // ---- control (by names, so the HTTP control surface can call it) ------------------------

  /** Create or update an environment: required reviewers by login, protection-rule apps (`true` = this hub's app). */
  configureEnvironment(o: {
    owner: string;
    repo: string;
    environment: string;
    reviewers?: string[];
    protectionApps?: number[];
    protectedByApp?: boolean;
    waitTimer?: number;
  }): Record<string, unknown> {
    const repo = findRepo(this.hub, o.owner, o.repo);
    for (const login of o.reviewers ?? [])
      if (!this.hub.user(login)) throw new HubError(422, `No user ${login} in the sandbox`);
    const apps = [...(o.protectionApps ?? []), ...(o.protectedByApp ? [this.hub.appId] : [])];
    const env = this.putEnvironment(repo, o.environment, {
      ...(o.reviewers ? { reviewers: o.reviewers } : {}),
      ...(apps.length > 0 ? { protectionApps: apps } : {}),
      ...(o.waitTimer !== undefined ? { wait_timer: o.waitTimer } : {}),
    });
    return this.environmentJson(repo, env);
  }

  /** Reviews recorded so far (optionally of one run). */
  reviewsOf(runId?: number): ReviewRecord[] {
    return this.reviews.filter((r) => runId === undefined || r.runId === runId);
  }

  /** Where each gate of a run stands, with protection-rule comments (status reports). */
  gatesOf(runId: number): {
    environment: string;
    job: string;
    outcome: Gate["outcome"];
    review: Gate["review"];
    rules: { appId: number; state: RuleState; comments: string[] }[];
  }[] {
    this.sweep();
    return [...this.gates.values()]
      .filter((g) => g.runId === runId)
      .map((g) => ({
        environment: this.environments.get(g.envId)?.name ?? "",
        job: g.jobName,
        outcome: g.outcome,
        review: g.review,
        rules: [...g.rules.entries()].map(([appId, r]) => ({ appId, state: r.state, comments: [...r.comments] })),
      }));
  }

  // ---- environments -------------------------------------------------------------------

  environment(repo: Repo, name: string): Environment | undefined {
    for (const e of this.environments.values())
      if (e.repoId === repo.id && e.name.toLowerCase() === name.toLowerCase()) return e;
    return undefined;
  }

  requireEnvironment(repo: Repo, name: string): Environment {
    const env = this.environment(repo, name);
    if (!env) throw new HubError(404, "Not Found");
    return env;
  }

  environmentsOf(repo: Repo): Environment[] {
    return [...this.environments.values()]
      .filter((e) => e.repoId === repo.id)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Create or update an environment (PUT semantics: given fields replace the old ones). */
  putEnvironment(
    repo: Repo,
    name: string,
    o: {
      wait_timer?: number;
      prevent_self_review?: boolean;
      reviewers?: string[];
      protectionApps?: number[];
      deployment_branch_policy?: Environment["deployment_branch_policy"];
    } = {},
  ): Environment {
    const now = this.hub.timestamp();
    let env = this.environment(repo, name);
    if (!env) {
      const id = this.hub.nextId();
      env = {
        id,
        node_id: this.hub.nodeId("Environment", id),
        repoId: repo.id,
        name,
        created_at: now,
        updated_at: now,
        wait_timer: 0,
        prevent_self_review: false,
        reviewers: [],
        protectionRules: [],
        deployment_branch_policy: null,
      };
      this.environments.set(id, env);
    }
    if (o.wait_timer !== undefined) env.wait_timer = o.wait_timer;
    if (o.prevent_self_review !== undefined) env.prevent_self_review = o.prevent_self_review;
    if (o.reviewers !== undefined) env.reviewers = [...o.reviewers];
    if (o.deployment_branch_policy !== undefined) env.deployment_branch_policy = o.deployment_branch_policy;
    if (o.protectionApps !== undefined) for (const appId of o.protectionApps) this.addProtectionRule(env, appId);
    env.updated_at = now;
    return env;
  }

  addProtectionRule(env: Environment, appId: number): { id: number; appId: number } {
    const existing = env.protectionRules.find((r) => r.appId === appId);
    if (existing) return existing;
    const rule = { id: this.hub.nextId(), appId };
    env.protectionRules.push(rule);
    return rule;
  }

  deleteEnvironment(repo: Repo, name: string): void {
    const env = this.requireEnvironment(repo, name);
    this.environments.delete(env.id);
  }

  environmentJson(repo: Repo, env: Environment): Record<string, unknown> {
    const rules: Record<string, unknown>[] = [];
    if (env.wait_timer > 0)
      rules.push({
        id: env.id * 10 + 1,
        node_id: this.hub.nodeId("Gate", env.id * 10 + 1),
        type: "wait_timer",
        wait_timer: env.wait_timer,
      });
    if (env.reviewers.length > 0) {
      rules.push({
        id: env.id * 10 + 2,
        node_id: this.hub.nodeId("Gate", env.id * 10 + 2),
        type: "required_reviewers",
        prevent_self_review: env.prevent_self_review,
        reviewers: env.reviewers.map((login) => ({ type: "User", reviewer: this.hub.userJson(login) })),
      });
    }
    if (env.deployment_branch_policy)
      rules.push({ id: env.id * 10 + 3, node_id: this.hub.nodeId("Gate", env.id * 10 + 3), type: "branch_policy" });
    return {
      id: env.id,
      node_id: env.node_id,
      name: env.name,
      url: repoApi(this.hub, repo, `/environments/${encodeURIComponent(env.name)}`),
      html_url: repoHtml(
        this.hub,
        repo,
        `/deployments/activity_log?environments_filter=${encodeURIComponent(env.name)}`,
      ),
      created_at: env.created_at,
      updated_at: env.updated_at,
      can_admins_bypass: true,
      protection_rules: rules,
      deployment_branch_policy: env.deployment_branch_policy,
    };
  }

  protectionRuleJson(rule: { id: number; appId: number }): Record<string, unknown> {
    const app = appJson(this.hub, rule.appId);
    return {
      id: rule.id,
      node_id: this.hub.nodeId("DeploymentProtectionRule", rule.id),
      enabled: true,
      app: {
        id: app.id,
        slug: app.slug,
        integration_url: `${this.hub.baseUrl}/apps/${String(app.slug)}`,
        node_id: app.node_id,
      },
    };
  }

  // ---- deployments --------------------------------------------------------------------

  createDeployment(
    repo: Repo,
    o: {
      sha: string;
      ref: string;
      environment: string;
      task?: string;
      description?: string | null;
      creator?: string | null;
      runId?: number;
      jobId?: number;
    },
  ): Deployment {
    const id = this.hub.nextId();
    const now = this.hub.timestamp();
    const d: Deployment = {
      id,
      node_id: this.hub.nodeId("Deployment", id),
      repoId: repo.id,
      sha: o.sha,
      ref: o.ref,
      task: o.task ?? "deploy",
      environment: o.environment,
      description: o.description ?? null,
      creator: o.creator ?? null,
      created_at: now,
      updated_at: now,
      statuses: [],
      runId: o.runId ?? null,
      jobId: o.jobId ?? null,
    };
    this.deployments.set(id, d);
    if (!this.environment(repo, o.environment)) this.putEnvironment(repo, o.environment);
    this.deliveries.push(() =>
      deliverRepoEvent(
        this.hub,
        repo,
        "deployment",
        { action: "created", deployment: this.deploymentJson(repo, d), workflow: null, workflow_run: null },
        this.sender(),
      ),
    );
    return d;
  }

  addStatus(repo: Repo, d: Deployment, state: DeploymentStatus["state"], description = ""): DeploymentStatus {
    const id = this.hub.nextId();
    const now = this.hub.timestamp();
    const s: DeploymentStatus = {
      id,
      node_id: this.hub.nodeId("DeploymentStatus", id),
      state,
      description,
      environment: d.environment,
      created_at: now,
      updated_at: now,
      log_url: "",
    };
    d.statuses.unshift(s);
    d.updated_at = now;
    const payload = {
      action: "created",
      deployment_status: this.statusJson(repo, d, s),
      deployment: this.deploymentJson(repo, d),
    };
    this.deliveries.push(() => deliverRepoEvent(this.hub, repo, "deployment_status", payload, this.sender()));
    return s;
  }

  requireDeployment(repo: Repo, id: number): Deployment {
    const d = this.deployments.get(id);
    if (!d || d.repoId !== repo.id) throw new HubError(404, "Not Found");
    return d;
  }

  listDeployments(
    repo: Repo,
    f: { sha?: string | null; ref?: string | null; task?: string | null; environment?: string | null },
  ): Deployment[] {
    return [...this.deployments.values()]
      .filter((d) => d.repoId === repo.id)
      .filter((d) => !f.sha || d.sha === f.sha)
      .filter((d) => !f.ref || d.ref === f.ref)
      .filter((d) => !f.task || d.task === f.task)
      .filter((d) => !f.environment || d.environment === f.environment)
      .sort((a, b) => b.id - a.id);
  }

  deploymentJson(repo: Repo, d: Deployment): Record<string, unknown> {
    const url = repoApi(this.hub, repo, `/deployments/${d.id}`);
    return {
      url,
      id: d.id,
      node_id: d.node_id,
      sha: d.sha,
      ref: d.ref,
      task: d.task,
      payload: {},
      original_environment: d.environment,
      environment: d.environment,
      description: d.description,
      creator: d.creator ? this.hub.userJson(d.creator) : this.sender(),
      created_at: d.created_at,
      updated_at: d.updated_at,
      statuses_url: `${url}/statuses`,
      repository_url: repoApi(this.hub, repo),
      transient_environment: false,
      production_environment: d.environment.toLowerCase() === "production",
      performed_via_github_app: d.runId !== null ? appJson(this.hub, ACTIONS_APP_ID) : null,
    };
  }

  statusJson(repo: Repo, d: Deployment, s: DeploymentStatus): Record<string, unknown> {
    const url = repoApi(this.hub, repo, `/deployments/${d.id}`);
    return {
      url: `${url}/statuses/${s.id}`,
      id: s.id,
      node_id: s.node_id,
      state: s.state,
      creator: this.sender(),
      description: s.description,
      environment: s.environment,
      target_url: s.log_url,
      created_at: s.created_at,
      updated_at: s.updated_at,
      deployment_url: url,
      repository_url: repoApi(this.hub, repo),
      environment_url: "",
      log_url: s.log_url,
      performed_via_github_app: d.runId !== null ? appJson(this.hub, ACTIONS_APP_ID) : null,
    };
  }

  // ---- gates: jobs bound to environments -------------------------------------------------

  /**
   * A job bound to an environment is about to start: create its deployment and, when the
   * environment is protected, a gate (with its deliveries). Returns whether it may start now.
   */
  jobReady(j: JobAtGate): { proceed: boolean; deployment: Deployment; gate: Gate | null } {
    const env = this.environment(j.repo, j.environment) ?? this.putEnvironment(j.repo, j.environment);
    const deployment = this.createDeployment(j.repo, {
      sha: j.sha,
      ref: j.ref,
      environment: env.name,
      creator: j.actor,
      runId: j.runId,
      jobId: j.jobId,
    });
    const protectedEnv = env.reviewers.length > 0 || env.protectionRules.length > 0 || env.wait_timer > 0;
    if (!protectedEnv) {
      this.addStatus(j.repo, deployment, "in_progress");
      return { proceed: true, deployment, gate: null };
    }
    const now = this.hub.now().getTime();
    const gate: Gate = {
      id: this.hub.nextId(),
      repoId: j.repo.id,
      runId: j.runId,
      attempt: j.attempt,
      jobId: j.jobId,
      jobName: j.jobName,
      envId: env.id,
      deploymentId: deployment.id,
      createdAtMs: now,
      waitUntilMs: env.wait_timer > 0 ? now + env.wait_timer * 60_000 : 0,
      reviewers: [...env.reviewers],
      review: { state: "pending", by: null, comment: null, at: null },
      rules: new Map(
        env.protectionRules.map((r) => [r.appId, { state: "pending" as RuleState, comments: [], decidedAt: null }]),
      ),
      outcome: "pending",
    };
    this.gates.set(gate.id, gate);
    this.addStatus(j.repo, deployment, "waiting");
    this.effects.record("deployments.gate.opened", "control", {
      run_id: j.runId,
      job: j.jobName,
      environment: env.name,
      reviewers: gate.reviewers,
      apps: [...gate.rules.keys()],
    });
    if (gate.reviewers.length > 0) this.sendReviewRequested(j.repo, gate, env, j.actor);
    for (const appId of gate.rules.keys()) this.sendProtectionRuleRequested(j.repo, gate, env, deployment, j, appId);
    return { proceed: false, deployment, gate };
  }

  /** The job behind a deployment finished: record its outcome on the deployment. */
  jobFinished(repo: Repo, jobId: number, conclusion: string): void {
    // A job ended while still waiting (cancelled, or ended by control): its gate no longer waits.
    for (const g of this.gates.values()) if (g.jobId === jobId && g.outcome === "pending") g.outcome = "cancelled";
    for (const d of this.deployments.values()) {
      if (
        d.repoId === repo.id &&
        d.jobId === jobId &&
        d.statuses[0]?.state !== "success" &&
        d.statuses[0]?.state !== "failure"
      ) {
        this.addStatus(repo, d, conclusion === "success" ? "success" : "failure");
      }
    }
  }

  pendingGates(runId: number): Gate[] {
    this.sweep();
    return [...this.gates.values()].filter((g) => g.runId === runId && g.outcome === "pending");
  }

  pendingDeploymentJson(repo: Repo, gate: Gate, caller: { kind: string; login?: string }): Record<string, unknown> {
    const env = this.environments.get(gate.envId)!;
    const canApprove =
      caller.kind === "user" &&
      gate.review.state === "pending" &&
      gate.reviewers.some((r) => r.toLowerCase() === caller.login?.toLowerCase());
    return {
      environment: {
        id: env.id,
        node_id: env.node_id,
        name: env.name,
        url: repoApi(this.hub, repo, `/environments/${encodeURIComponent(env.name)}`),
        html_url: repoHtml(
          this.hub,
          repo,
          `/deployments/activity_log?environments_filter=${encodeURIComponent(env.name)}`,
        ),
      },
      wait_timer: env.wait_timer,
      wait_timer_started_at: env.wait_timer > 0 ? this.hub.timestamp(new Date(gate.createdAtMs)) : null,
      current_user_can_approve: canApprove,
      reviewers: gate.reviewers.map((login) => ({ type: "User", reviewer: this.hub.userJson(login) })),
    };
  }

  /**
   * `POST /actions/runs/{run_id}/pending_deployments`: a required reviewer approves or rejects
   * the run's waiting environments. Throws HubError 403/422 as the API does.
   */
  review(
    repo: Repo,
    runId: number,
    caller: { kind: "user"; login: string } | { kind: "other" },
    body: { environment_ids: number[]; state: "approved" | "rejected"; comment: string },
  ): Deployment[] {
    const pending = this.pendingGates(runId);
    const chosen: Gate[] = [];
    for (const envId of body.environment_ids) {
      const env = this.environments.get(envId);
      const gate = pending.find((g) => g.envId === envId && g.reviewers.length > 0 && g.review.state === "pending");
      if (!env || env.repoId !== repo.id || !gate) {
        throw new HubError(422, "Validation Failed", [
          {
            resource: "DeploymentReview",
            field: "environment_ids",
            code: "custom",
            message: `Environment ${envId} is not waiting for a review on run ${runId}`,
          },
        ]);
      }
      const decision = mayReview(caller, gate.reviewers, env.name);
      if (!decision.ok) {
        if (decision.status === 403) throw new HubError(403, decision.message);
        throw new HubError(422, decision.message, [
          { resource: "DeploymentReview", field: "environment_ids", code: "custom", message: decision.message },
        ]);
      }
      chosen.push(gate);
    }
    const login = (caller as { login: string }).login;
    const at = this.hub.timestamp();
    for (const gate of chosen) {
      const env = this.environments.get(gate.envId)!;
      gate.review = { state: body.state, by: login, comment: body.comment, at };
      this.reviews.push({ runId, environment: env.name, state: body.state, by: login, comment: body.comment, at });
      this.effects.record(`deployments.review.${body.state}`, `user:${login}`, {
        run_id: runId,
        environment: env.name,
        comment: body.comment,
      });
      this.sendReviewDecision(repo, gate, env, body.state, login, body.comment);
      this.settle(gate);
    }
    return chosen.map((g) => this.deployments.get(g.deploymentId)!);
  }

  /**
   * `POST /actions/runs/{run_id}/deployment_protection_rule` from a protection-rule app: approve,
   * reject, or (no state) only report a status comment.
   */
  protectionCallback(
    repo: Repo,
    runId: number,
    appId: number,
    body: { environment_name: string; state?: "approved" | "rejected"; comment?: string },
    by: string,
  ): void {
    this.sweep();
    const env = this.environment(repo, body.environment_name);
    if (!env) throw new HubError(404, "Not Found");
    const gates = [...this.gates.values()].filter((g) => g.runId === runId && g.envId === env.id && g.rules.has(appId));
    const gate = gates.find((g) => g.outcome === "pending") ?? gates[gates.length - 1];
    if (!gate) {
      throw new HubError(422, "Validation Failed", [
        {
          resource: "DeploymentProtectionRule",
          field: "environment_name",
          code: "custom",
          message: `No deployment protection rule of this app is waiting on environment ${env.name} for run ${runId}`,
        },
      ]);
    }
    const rule = gate.rules.get(appId)!;
    if (body.state === undefined) {
      rule.comments.push(body.comment ?? "");
      this.effects.record("deployments.protection_rule.status_report", by, {
        run_id: runId,
        environment: env.name,
        comment: body.comment ?? "",
      });
      return;
    }
    if (rule.state !== "pending" || gate.outcome !== "pending") {
      throw new HubError(422, "Validation Failed", [
        {
          resource: "DeploymentProtectionRule",
          field: "state",
          code: "custom",
          message: `The deployment protection rule for environment ${env.name} was already decided (${gate.outcome === "pending" ? rule.state : gate.outcome})`,
        },
      ]);
    }
    rule.state = body.state;
    rule.decidedAt = this.hub.timestamp();
    if (body.comment) rule.comments.push(body.comment);
    this.effects.record(`deployments.protection_rule.${body.state}`, by, {
      run_id: runId,
      environment: env.name,
      comment: body.comment ?? null,
    });
    this.settle(gate);
  }

  /** Time out gates older than 30 days and open gates whose wait timer ran out (sandbox clock). */
  sweep(): void {
    for (const gate of this.gates.values()) if (gate.outcome === "pending") this.settle(gate);
  }

  private settle(gate: Gate): void {
    const outcome = gateOutcome(
      {
        reviewers: gate.reviewers,
        review: gate.review.state,
        rules: [...gate.rules.values()].map((r) => r.state),
        createdAtMs: gate.createdAtMs,
        waitUntilMs: gate.waitUntilMs,
      },
      this.hub.now().getTime(),
    );
    if (outcome.state === "pending") return;
    gate.outcome = outcome.state;
    const repo = this.hub.repoById(gate.repoId);
    const deployment = this.deployments.get(gate.deploymentId);
    if (repo && deployment)
      this.addStatus(
        repo,
        deployment,
        outcome.state === "approved" ? "in_progress" : "failure",
        outcome.reasons.join("; "),
      );
    this.effects.record(`deployments.gate.${outcome.state}`, "hub", {
      run_id: gate.runId,
      job: gate.jobName,
      reasons: outcome.reasons,
    });
    if (outcome.state === "approved") this.listener?.gateOpened(gate);
    else this.listener?.gateClosed(gate, outcome.state, outcome.reasons.join("; "));
  }

  // ---- deliveries ---------------------------------------------------------------------

  private sender(): Record<string, unknown> {
    return botSender("github-actions", 41898282);
  }

  private jobRunsOf(gate: Gate): Record<string, unknown>[] {
    const job = this.listener?.workflowJobJson(gate.jobId) ?? {};
    const env = this.environments.get(gate.envId)!;
    return [
      {
        id: gate.jobId,
        name: gate.jobName,
        status: job.status ?? "waiting",
        conclusion: job.conclusion ?? null,
        environment: env.name,
        html_url: job.html_url ?? null,
        created_at: job.created_at ?? null,
        updated_at: this.hub.timestamp(),
      },
    ];
  }

  private sendReviewRequested(repo: Repo, gate: Gate, env: Environment, requestor: string): void {
    const body = {
      action: "requested",
      since: this.hub.timestamp(new Date(gate.createdAtMs)),
      environment: env.name,
      requestor: this.hub.userJson(requestor),
      reviewers: gate.reviewers.map((login) => ({ type: "User", reviewer: this.hub.userJson(login) })),
      workflow_run: this.listener?.workflowRunJson(gate.runId) ?? null,
      workflow_job_run: this.jobRunsOf(gate)[0],
    };
    this.deliveries.push(() => deliverRepoEvent(this.hub, repo, "deployment_review", body, this.sender()));
  }

  private sendReviewDecision(
    repo: Repo,
    gate: Gate,
    env: Environment,
    state: "approved" | "rejected",
    login: string,
    comment: string,
  ): void {
    const runs = this.jobRunsOf(gate);
    const body = {
      action: state,
      approver: this.hub.userJson(login),
      comment,
      since: this.hub.timestamp(new Date(gate.createdAtMs)),
      environment: env.name,
      reviewers: gate.reviewers.map((l) => ({ type: "User", reviewer: this.hub.userJson(l) })),
      workflow_run: this.listener?.workflowRunJson(gate.runId) ?? null,
      workflow_job_run: runs[0],
      workflow_job_runs: runs,
    };
    this.deliveries.push(() => deliverRepoEvent(this.hub, repo, "deployment_review", body, this.hub.userJson(login)));
  }

  private sendProtectionRuleRequested(
    repo: Repo,
    gate: Gate,
    env: Environment,
    d: Deployment,
    j: JobAtGate,
    appId: number,
  ): void {
    // Only the hub's own app can be called back; rules of other apps just stay pending.
    if (appId !== this.hub.appId) return;
    const body = {
      action: "requested",
      environment: env.name,
      event: j.event,
      ref: j.ref,
      sha: j.sha,
      deployment_callback_url: repoApi(this.hub, repo, `/actions/runs/${gate.runId}/deployment_protection_rule`),
      deployment: this.deploymentJson(repo, d),
      pull_requests: [],
    };
    this.deliveries.push(() =>
      deliverRepoEvent(this.hub, repo, "deployment_protection_rule", body, this.hub.userJson(j.actor)),
    );
  }
}
