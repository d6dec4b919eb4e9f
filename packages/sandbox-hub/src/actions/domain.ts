// Workflows, workflow runs and their attempts, jobs with steps and logs, and re-runs.
// Tests and the demo drive the lifecycle through the control functions (startRun,
// completeJob, failJob, completeRun, scriptAttempt); clients see it over the REST routes
// and through workflow_run / workflow_job deliveries.
import { createHash } from "node:crypto";
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { ChecksDomain, CheckRun } from "../checks/domain.js";
import type { DeploymentsDomain, Gate } from "../deployments/domain.js";
import type { Effect, EffectsLog } from "../core/effects.js";
import { ACTIONS_APP_ID, type DeliveryQueue, deliverRepoEvent, findRepo, repoApi, repoHtml } from "../core/shared.js";
import {
  jobsReadyToStart,
  jobsToSkip,
  planRerun,
  runConclusion,
  stepConclusions,
  type JobConclusion,
  type JobStatus,
  type RerunDecision,
  type RerunMode,
} from "./plan.js";

export interface JobSpec {
  name: string;
  steps?: string[];
  needs?: string[];
  /** Environment the job deploys to (protection rules apply). */
  environment?: string;
}

export interface Workflow {
  id: number;
  node_id: string;
  repoId: number;
  name: string;
  path: string;
  state: "active" | "disabled_manually";
  created_at: string;
  updated_at: string;
}

export interface Step {
  name: string;
  number: number;
  status: "queued" | "in_progress" | "completed";
  conclusion: JobConclusion | null;
  started_at: string | null;
  completed_at: string | null;
}

export interface Job {
  id: number;
  runId: number;
  attempt: number;
  name: string;
  needs: string[];
  environment: string | null;
  status: JobStatus;
  conclusion: JobConclusion | null;
  steps: Step[];
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  log: string | null;
  runnerLost: boolean;
}

export type RunStatus = "requested" | "queued" | "in_progress" | "waiting" | "completed";

export interface Attempt {
  n: number;
  status: RunStatus;
  conclusion: JobConclusion | null;
  jobIds: number[];
  checkSuiteId: number;
  created_at: string;
  updated_at: string;
  run_started_at: string;
  triggering_actor: string;
  mode: "initial" | RerunMode;
}

export interface Run {
  id: number;
  node_id: string;
  repoId: number;
  /** Repository the run's code comes from: `repoId`, or a fork's id for a fork pull request's run. */
  headRepoId: number;
  workflowId: number;
  run_number: number;
  head_branch: string;
  head_sha: string;
  event: string;
  actor: string;
  specs: JobSpec[];
  attempts: Attempt[];
  pull_requests: Record<string, unknown>[];
  created_at: string;
}

/** A scripted job result: a conclusion, or a conclusion with the failing step, a log, or a lost runner. */
export type JobOutcome =
  JobConclusion | { conclusion: JobConclusion; step?: string; log?: string; runnerLost?: boolean };

export interface StartRunOptions {
  owner: string;
  repo: string;
  /** Workflow name (e.g. `CI`) or file path (`.github/workflows/ci.yml`); created when unknown. */
  workflow: string;
  branch?: string;
  sha?: string;
  event?: string;
  actor?: string;
  jobs?: JobSpec[];
  pullRequests?: Record<string, unknown>[];
  /**
   * `owner/name` of a fork of the repository (see `control.openPullRequest({ fromFork })`): the
   * run is one of a pull request from that fork, running the fork's code. As on GitHub its
   * `head_repository` is the fork and its `pull_requests` is empty; `branch` and `sha` default
   * to the fork's default branch and that branch's tip, `event` to `pull_request`.
   */
  headRepository?: string;
}

export interface FinishJobOptions {
  runId: number;
  job: string;
  conclusion?: JobConclusion;
  /** Name of the step that failed (default: the last step). */
  step?: string;
  log?: string;
  runnerLost?: boolean;
}

/** A job's check run shows the tail of its log, as GitHub's annotations do: a log of MiB does not fit a summary. */
const SUMMARY_LOG_TAIL = 4000;

const DEFAULT_JOBS: JobSpec[] = [{ name: "build", steps: ["Set up job", "Run tests", "Complete job"] }];

export class ActionsDomain {
  readonly workflows = new Map<number, Workflow>();
  readonly runs = new Map<number, Run>();
  readonly jobs = new Map<number, Job>();
  private readonly scripts = new Map<string, JobOutcome | Record<string, JobOutcome>>();
  private readonly runNumbers = new Map<number, number>();
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly hub: Hub,
    private readonly checks: ChecksDomain,
    private readonly deployments: DeploymentsDomain,
    private readonly effects: EffectsLog,
    private readonly deliveries: DeliveryQueue,
  ) {
    deployments.attach({
      workflowRunJson: (runId) => {
        const run = this.runs.get(runId);
        return run ? this.runJson(run) : {};
      },
      workflowJobJson: (jobId) => {
        const job = this.jobs.get(jobId);
        return job ? this.jobJson(job) : {};
      },
      gateOpened: (gate) => this.onGateOpened(gate),
      gateClosed: (gate, state, reason) => this.onGateClosed(gate, state, reason),
    });
  }

  // ---- control: workflows and runs ------------------------------------------------------

  addWorkflow(owner: string, repoName: string, o: { name: string; path?: string }): Workflow {
    const repo = findRepo(this.hub, owner, repoName);
    return this.workflowFor(repo, o.path ?? o.name, o.name);
  }

  startRun(o: StartRunOptions): Run {
    const repo = findRepo(this.hub, o.owner, o.repo);
    const head = o.headRepository ? this.forkOf(repo, o.headRepository) : repo;
    const fromFork = head.id !== repo.id;
    // GitHub lists no pull request on a run whose head is in another repository.
    if (fromFork && o.pullRequests?.length)
      throw new HubError(422, "A run of a fork's pull request has no pull_requests (GitHub leaves them empty)");
    const workflow = this.workflowFor(repo, o.workflow);
    const branch = o.branch ?? head.default_branch;
    const id = this.hub.nextId();
    const runNumber = (this.runNumbers.get(workflow.id) ?? 0) + 1;
    this.runNumbers.set(workflow.id, runNumber);
    const run: Run = {
      id,
      node_id: this.hub.nodeId("WorkflowRun", id),
      repoId: repo.id,
      headRepoId: head.id,
      workflowId: workflow.id,
      run_number: runNumber,
      head_branch: branch,
      head_sha: o.sha ?? this.hub.resolveRef?.(head, branch) ?? fakeSha(`${head.id}:${branch}:${id}`),
      event: o.event ?? (fromFork ? "pull_request" : "push"),
      actor: o.actor ?? (fromFork ? head.owner : this.defaultActor(repo)),
      specs: (o.jobs ?? DEFAULT_JOBS).map((j) => ({
        ...j,
        steps: j.steps ?? ["Set up job", "Run", "Complete job"],
        needs: j.needs ?? [],
      })),
      attempts: [],
      pull_requests: o.pullRequests ?? [],
      created_at: this.hub.timestamp(),
    };
    this.validateSpecs(run.specs);
    this.runs.set(id, run);
    this.createAttempt(
      repo,
      run,
      "initial",
      run.specs.map((s) => s.name),
      [],
      run.actor,
    );
    this.beginAttempt(repo, run);
    return run;
  }

  /** Finish a job of the run's latest attempt (default success). */
  completeJob(o: FinishJobOptions): Job {
    const { repo, run, job } = this.locateJob(o.runId, o.job);
    this.finishJob(repo, run, job, o.conclusion ?? "success", o);
    this.advance(repo, run);
    return job;
  }

  /** Fail a job of the run's latest attempt (default conclusion `failure`), optionally at a step and with a log. */
  failJob(o: FinishJobOptions): Job {
    return this.completeJob({ ...o, conclusion: o.conclusion ?? "failure" });
  }

  /** End the run now: jobs still running or queued finish with `conclusion` (default success). */
  completeRun(runId: number, conclusion: JobConclusion = "success"): Run {
    const run = this.requireRun(runId);
    const repo = this.repoOf(run);
    for (const job of this.jobsOf(run)) if (job.status !== "completed") this.finishJob(repo, run, job, conclusion, {});
    this.advance(repo, run);
    return run;
  }

  /** Outcomes for the jobs of a (future) attempt: applied as soon as the attempt's jobs start. */
  scriptAttempt(runId: number, attempt: number, outcomes: JobOutcome | Record<string, JobOutcome>): void {
    this.scripts.set(`${runId}:${attempt}`, outcomes);
  }

  /** Resolves when every scheduled attempt start and every delivery so far is done. */
  async idle(): Promise<void> {
    let seen: Promise<void> | undefined;
    while (seen !== this.pending) {
      seen = this.pending;
      await seen;
    }
    await this.deliveries.idle();
  }

  /** A run as the API renders it (latest attempt, or attempt `n`), with its jobs. */
  describeRun(runId: number, n?: number): Record<string, unknown> {
    const run = this.requireRun(runId);
    return { ...this.runJson(run, n), jobs: this.jobsOf(run, n).map((j) => this.jobJson(j)) };
  }

  /** Re-run requests recorded so far (allowed or refused), optionally of one run. */
  rerunRequests(runId?: number): Effect[] {
    return this.effects.entries.filter(
      (e) =>
        (e.kind === "actions.rerun" || e.kind === "actions.rerun-failed-jobs" || e.kind === "actions.rerun-job") &&
        (runId === undefined || e.detail.run_id === runId),
    );
  }

  // ---- re-runs ----------------------------------------------------------------------------

  /** Re-run a run (all jobs or failed ones and dependents). Throws HubError 403 when refused. */
  rerun(runId: number, mode: RerunMode, by: string, o: { debug?: boolean; job?: string } = {}): RerunDecision {
    const run = this.requireRun(runId);
    const repo = this.repoOf(run);
    const latest = this.latest(run);
    const decision = planRerun(
      { status: latest.status, attempt: latest.n, jobs: this.jobsOf(run) },
      mode,
      undefined,
      o.job,
    );
    const kind = mode === "all" ? "rerun" : mode === "failed" ? "rerun-failed-jobs" : "rerun-job";
    this.effects.record(`actions.${kind}`, by, {
      run_id: runId,
      attempt: latest.n,
      allowed: decision.allowed,
      reasons: decision.reasons,
      debug: o.debug ?? false,
      ...(o.job ? { job: o.job } : {}),
    });
    if (!decision.allowed) throw new HubError(decision.status, decision.message);
    const keep = decision.keep.map((name) => this.jobsOf(run).find((j) => j.name === name)!);
    this.createAttempt(repo, run, mode, decision.rerun, keep, by.startsWith("user:") ? by.slice(5) : run.actor);
    // The API answers before the new attempt starts; it then runs on its own.
    this.defer(() => this.beginAttempt(repo, run));
    return decision;
  }

  /** `POST .../cancel`: unfinished jobs end `cancelled`; 409 on a completed run. */
  cancel(runId: number, by: string): void {
    const run = this.requireRun(runId);
    const repo = this.repoOf(run);
    this.effects.record("actions.cancel", by, { run_id: runId, attempt: this.latest(run).n });
    if (this.latest(run).status === "completed")
      throw new HubError(409, "Cannot cancel a workflow run that is completed.");
    for (const job of this.jobsOf(run)) if (job.status !== "completed") this.finishJob(repo, run, job, "cancelled", {});
    this.advance(repo, run);
  }

  // ---- lookups ------------------------------------------------------------------------

  requireRun(runId: number, repo?: Repo): Run {
    const run = this.runs.get(runId);
    if (!run || (repo && run.repoId !== repo.id)) throw new HubError(404, "Not Found");
    return run;
  }

  requireJob(jobId: number, repo?: Repo): Job {
    const job = this.jobs.get(jobId);
    if (!job) throw new HubError(404, "Not Found");
    if (repo && this.runs.get(job.runId)?.repoId !== repo.id) throw new HubError(404, "Not Found");
    return job;
  }

  requireWorkflow(repo: Repo, idOrFile: string): Workflow {
    const wf = [...this.workflows.values()].find(
      (w) =>
        w.repoId === repo.id &&
        (String(w.id) === idOrFile || w.path === idOrFile || w.path.split("/").pop() === idOrFile),
    );
    if (!wf) throw new HubError(404, "Not Found");
    return wf;
  }

  workflowsOf(repo: Repo): Workflow[] {
    return [...this.workflows.values()].filter((w) => w.repoId === repo.id);
  }

  latest(run: Run): Attempt {
    return run.attempts[run.attempts.length - 1]!;
  }

  attempt(run: Run, n: number): Attempt {
    const a = run.attempts[n - 1];
    if (!a) throw new HubError(404, "Not Found");
    return a;
  }

  /** Jobs of an attempt (default latest): re-run ones plus those kept from earlier attempts. */
  jobsOf(run: Run, n?: number): Job[] {
    const a = n === undefined ? this.latest(run) : this.attempt(run, n);
    return a.jobIds.map((id) => this.jobs.get(id)!);
  }

  /** Every job of every attempt, each once. */
  allJobsOf(run: Run): Job[] {
    const ids = new Set(run.attempts.flatMap((a) => a.jobIds));
    return [...ids].map((id) => this.jobs.get(id)!);
  }

  listRuns(
    repo: Repo,
    f: {
      workflowId?: number;
      branch?: string | null;
      event?: string | null;
      status?: string | null;
      actor?: string | null;
      head_sha?: string | null;
      check_suite_id?: number | null;
    },
  ): Run[] {
    return (
      [...this.runs.values()]
        .filter((r) => r.repoId === repo.id)
        .filter((r) => f.workflowId === undefined || r.workflowId === f.workflowId)
        .filter((r) => !f.branch || r.head_branch === f.branch)
        .filter((r) => !f.event || r.event === f.event)
        .filter((r) => !f.actor || r.actor.toLowerCase() === f.actor.toLowerCase())
        .filter((r) => !f.head_sha || r.head_sha === f.head_sha)
        .filter((r) => !f.check_suite_id || r.attempts.some((a) => a.checkSuiteId === f.check_suite_id))
        // `status` accepts a status or a conclusion, as the API does.
        .filter((r) => !f.status || this.latest(r).status === f.status || this.latest(r).conclusion === f.status)
        .sort((a, b) => b.id - a.id)
    );
  }

  // ---- JSON -----------------------------------------------------------------------------

  workflowJson(wf: Workflow): Record<string, unknown> {
    const repo = this.hub.repoById(wf.repoId)!;
    return {
      id: wf.id,
      node_id: wf.node_id,
      name: wf.name,
      path: wf.path,
      state: wf.state,
      created_at: wf.created_at,
      updated_at: wf.updated_at,
      url: repoApi(this.hub, repo, `/actions/workflows/${wf.id}`),
      html_url: repoHtml(this.hub, repo, `/blob/${repo.default_branch}/${wf.path}`),
      badge_url: repoHtml(this.hub, repo, `/workflows/${encodeURIComponent(wf.name)}/badge.svg`),
    };
  }

  runJson(run: Run, n?: number): Record<string, unknown> {
    const repo = this.repoOf(run);
    const a = n === undefined ? this.latest(run) : this.attempt(run, n);
    const wf = this.workflows.get(run.workflowId)!;
    const url = repoApi(this.hub, repo, `/actions/runs/${run.id}`);
    const suite = this.checks.suites.get(a.checkSuiteId);
    const repoSummary = this.hub.repoJson(repo);
    return {
      id: run.id,
      name: wf.name,
      node_id: run.node_id,
      head_branch: run.head_branch,
      head_sha: run.head_sha,
      path: wf.path,
      display_title: wf.name,
      run_number: run.run_number,
      event: run.event,
      status: a.status,
      conclusion: a.conclusion,
      workflow_id: wf.id,
      check_suite_id: a.checkSuiteId,
      check_suite_node_id: suite?.node_id ?? null,
      url,
      html_url: repoHtml(this.hub, repo, `/actions/runs/${run.id}`),
      pull_requests: run.pull_requests,
      created_at: a.created_at,
      updated_at: a.updated_at,
      actor: this.hub.userJson(run.actor),
      run_attempt: a.n,
      referenced_workflows: [],
      run_started_at: a.run_started_at,
      triggering_actor: this.hub.userJson(a.triggering_actor),
      jobs_url: `${url}/jobs`,
      logs_url: `${url}/logs`,
      check_suite_url: repoApi(this.hub, repo, `/check-suites/${a.checkSuiteId}`),
      artifacts_url: `${url}/artifacts`,
      cancel_url: `${url}/cancel`,
      rerun_url: `${url}/rerun`,
      previous_attempt_url: a.n > 1 ? `${url}/attempts/${a.n - 1}` : null,
      workflow_url: repoApi(this.hub, repo, `/actions/workflows/${wf.id}`),
      head_commit: {
        id: run.head_sha,
        tree_id: run.head_sha,
        message: `Commit ${run.head_sha.slice(0, 7)}`,
        timestamp: run.created_at,
        author: { name: run.actor, email: `${run.actor}@users.noreply.example` },
        committer: { name: run.actor, email: `${run.actor}@users.noreply.example` },
      },
      repository: repoSummary,
      head_repository: run.headRepoId === repo.id ? repoSummary : this.hub.repoJson(this.hub.repoById(run.headRepoId)!),
    };
  }

  jobJson(job: Job): Record<string, unknown> {
    const run = this.runs.get(job.runId)!;
    const repo = this.repoOf(run);
    const wf = this.workflows.get(run.workflowId)!;
    const started = job.started_at !== null;
    return {
      id: job.id,
      run_id: job.runId,
      workflow_name: wf.name,
      head_branch: run.head_branch,
      run_url: repoApi(this.hub, repo, `/actions/runs/${run.id}`),
      run_attempt: job.attempt,
      node_id: this.hub.nodeId("CheckRun", job.id),
      head_sha: run.head_sha,
      url: repoApi(this.hub, repo, `/actions/jobs/${job.id}`),
      html_url: repoHtml(this.hub, repo, `/actions/runs/${run.id}/job/${job.id}`),
      status: job.status,
      conclusion: job.conclusion,
      created_at: job.created_at,
      started_at: job.started_at ?? job.created_at,
      completed_at: job.completed_at,
      name: job.name,
      steps: job.steps.map((s) => ({ ...s })),
      check_run_url: repoApi(this.hub, repo, `/check-runs/${job.id}`),
      labels: ["ubuntu-latest"],
      runner_id: started ? 1 : null,
      runner_name: started ? "sandbox-runner-1" : null,
      runner_group_id: started ? 1 : null,
      runner_group_name: started ? "Default" : null,
    };
  }

  /** The job's log text (what the log download redirect serves). */
  logOf(job: Job): string {
    const lines: string[] = [];
    const at = job.started_at ?? job.created_at;
    for (const s of job.steps) {
      lines.push(`${at} ##[group]${s.name}`);
      if (s.conclusion === "failure" && job.log === null)
        lines.push(`${at} ##[error]Process completed with exit code 1.`);
      lines.push(`${at} ##[endgroup]`);
    }
    if (job.log !== null) lines.push(...job.log.split("\n").map((l) => `${at} ${l}`));
    if (job.runnerLost)
      lines.push(
        `${at} ##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.`,
      );
    return lines.join("\n") + "\n";
  }

  // ---- lifecycle internals ----------------------------------------------------------------

  private createAttempt(
    repo: Repo,
    run: Run,
    mode: Attempt["mode"],
    rerunNames: string[],
    keep: Job[],
    triggeringActor: string,
  ): Attempt {
    const n = run.attempts.length + 1;
    const suite = this.checks.createSuite(repo, {
      appId: ACTIONS_APP_ID,
      headSha: run.head_sha,
      headBranch: run.head_branch,
      workflowRunId: run.id,
    });
    const now = this.hub.timestamp();
    const attempt: Attempt = {
      n,
      status: "queued",
      conclusion: null,
      jobIds: [],
      checkSuiteId: suite.id,
      created_at: now,
      updated_at: now,
      run_started_at: now,
      triggering_actor: triggeringActor,
      mode,
    };
    run.attempts.push(attempt);
    for (const spec of run.specs) {
      const kept = keep.find((j) => j.name === spec.name);
      if (kept) {
        attempt.jobIds.push(kept.id);
        continue;
      }
      if (!rerunNames.includes(spec.name)) continue;
      const check = this.checks.createRun(
        repo,
        { name: spec.name, head_sha: run.head_sha, status: "queued" },
        ACTIONS_APP_ID,
        { suite, by: "actions" },
      );
      const job: Job = {
        id: check.id,
        runId: run.id,
        attempt: n,
        name: spec.name,
        needs: spec.needs ?? [],
        environment: spec.environment ?? null,
        status: "queued",
        conclusion: null,
        steps: (spec.steps ?? []).map((name, i) => ({
          name,
          number: i + 1,
          status: "queued",
          conclusion: null,
          started_at: null,
          completed_at: null,
        })),
        created_at: now,
        started_at: null,
        completed_at: null,
        log: null,
        runnerLost: false,
      };
      this.jobs.set(job.id, job);
      attempt.jobIds.push(job.id);
    }
    this.sendRun(repo, run, "requested");
    return attempt;
  }

  private beginAttempt(repo: Repo, run: Run): void {
    const a = this.latest(run);
    a.status = "in_progress";
    a.run_started_at = this.hub.timestamp();
    a.updated_at = a.run_started_at;
    this.sendRun(repo, run, "in_progress");
    for (const job of this.jobsOf(run)) if (job.attempt === a.n) this.sendJob(repo, job, "queued");
    this.advance(repo, run);
  }

  /** Move the latest attempt forward: skip blocked jobs, start ready ones, apply scripts, finish when done. */
  private advance(repo: Repo, run: Run): void {
    const a = this.latest(run);
    if (a.status === "completed" || a.status === "queued") return;
    for (let progressed = true; progressed;) {
      progressed = false;
      const jobs = this.jobsOf(run);
      for (const name of jobsToSkip(jobs)) {
        this.finishJob(
          repo,
          run,
          jobs.find((j) => j.name === name)!,
          "skipped",
          {},
        );
        progressed = true;
      }
      for (const name of jobsReadyToStart(jobs)) {
        this.startJob(
          repo,
          run,
          jobs.find((j) => j.name === name)!,
        );
        progressed = true;
      }
      for (const job of jobs) {
        const scripted =
          job.status === "in_progress" && job.attempt === a.n ? this.scriptedOutcome(run.id, a.n, job.name) : undefined;
        if (!scripted) continue;
        const o = typeof scripted === "string" ? { conclusion: scripted } : scripted;
        this.finishJob(repo, run, job, o.conclusion, o);
        progressed = true;
      }
    }
    const jobs = this.jobsOf(run);
    if (jobs.every((j) => j.status === "completed")) {
      this.finishAttempt(repo, run);
      return;
    }
    const status: RunStatus = jobs.some((j) => j.status === "in_progress")
      ? "in_progress"
      : jobs.some((j) => j.status === "waiting")
        ? "waiting"
        : "in_progress";
    if (status !== a.status) {
      a.status = status;
      a.updated_at = this.hub.timestamp();
    }
  }

  private startJob(repo: Repo, run: Run, job: Job): void {
    if (job.environment) {
      const gate = this.deployments.jobReady({
        repo,
        runId: run.id,
        attempt: job.attempt,
        jobId: job.id,
        jobName: job.name,
        environment: job.environment,
        sha: run.head_sha,
        ref: run.head_branch,
        event: run.event,
        actor: run.actor,
      });
      if (!gate.proceed) {
        job.status = "waiting";
        this.sendJob(repo, job, "waiting");
        return;
      }
    }
    this.runJob(repo, job);
  }

  private runJob(repo: Repo, job: Job): void {
    const now = this.hub.timestamp();
    job.status = "in_progress";
    job.started_at = now;
    if (job.steps[0]) Object.assign(job.steps[0], { status: "in_progress", started_at: now });
    this.updateCheck(repo, job, { status: "in_progress" });
    this.sendJob(repo, job, "in_progress");
  }

  private finishJob(
    repo: Repo,
    run: Run,
    job: Job,
    conclusion: JobConclusion,
    o: { step?: string; log?: string; runnerLost?: boolean },
  ): void {
    if (job.status === "completed") throw new HubError(409, `Job ${job.name} of run ${run.id} is already completed`);
    const now = this.hub.timestamp();
    const failing = o.step === undefined ? null : job.steps.findIndex((s) => s.name === o.step);
    if (failing === -1) throw new HubError(404, `Job ${job.name} has no step named ${o.step}`);
    const conclusions = stepConclusions(job.steps.length, conclusion, failing);
    job.steps.forEach((s, i) => {
      const c = conclusions[i] ?? null;
      // A lost runner leaves the interrupted step without a conclusion.
      const interrupted = o.runnerLost && c === conclusion && conclusion !== "success";
      Object.assign(s, {
        status: "completed",
        conclusion: interrupted ? null : c,
        started_at: s.started_at ?? (job.started_at ? now : null),
        completed_at: now,
      });
    });
    job.status = "completed";
    job.conclusion = conclusion;
    job.completed_at = now;
    job.started_at ??= now;
    if (o.log !== undefined) job.log = o.log;
    job.runnerLost = o.runnerLost ?? false;
    this.updateCheck(repo, job, {
      conclusion,
      output:
        conclusion === "success" || conclusion === "skipped"
          ? undefined
          : {
              title: `${job.name} ${conclusion}`,
              summary: o.log?.slice(-SUMMARY_LOG_TAIL) ?? `Job ${job.name} concluded ${conclusion}.`,
            },
    });
    this.sendJob(repo, job, "completed");
    if (job.environment) this.deployments.jobFinished(repo, job.id, conclusion);
    this.effects.record("actions.job.completed", "control", {
      run_id: run.id,
      job: job.name,
      attempt: job.attempt,
      conclusion,
    });
  }

  private finishAttempt(repo: Repo, run: Run): void {
    const a = this.latest(run);
    a.status = "completed";
    a.conclusion = runConclusion(this.jobsOf(run).map((j) => j.conclusion));
    a.updated_at = this.hub.timestamp();
    this.sendRun(repo, run, "completed");
  }

  private onGateOpened(gate: Gate): void {
    const job = this.jobs.get(gate.jobId);
    const run = this.runs.get(gate.runId);
    if (!job || !run || job.status !== "waiting") return;
    const repo = this.repoOf(run);
    this.runJob(repo, job);
    this.advance(repo, run);
  }

  private onGateClosed(gate: Gate, state: "rejected" | "timed_out", reason: string): void {
    const job = this.jobs.get(gate.jobId);
    const run = this.runs.get(gate.runId);
    if (!job || !run || job.status !== "waiting") return;
    const repo = this.repoOf(run);
    this.finishJob(repo, run, job, "failure", {
      log: `##[error]Deployment to ${this.deployments.environments.get(gate.envId)?.name ?? "environment"} ${state === "rejected" ? "was rejected" : "timed out"}: ${reason}`,
    });
    this.advance(repo, run);
  }

  private scriptedOutcome(runId: number, attempt: number, jobName: string): JobOutcome | undefined {
    const script = this.scripts.get(`${runId}:${attempt}`);
    if (script === undefined) return undefined;
    if (typeof script === "string" || "conclusion" in script) return script as JobOutcome;
    return (script as Record<string, JobOutcome>)[jobName];
  }

  private updateCheck(repo: Repo, job: Job, body: Record<string, unknown>): void {
    const check: CheckRun | undefined = this.checks.runs.get(job.id);
    if (check) this.checks.updateRun(repo, check, body, "actions");
  }

  private defer(fn: () => void): void {
    this.pending = this.pending.then(
      () =>
        new Promise<void>((resolve) =>
          setImmediate(() => {
            try {
              fn();
            } finally {
              resolve();
            }
          }),
        ),
    );
  }

  private locateJob(runId: number, name: string): { repo: Repo; run: Run; job: Job } {
    const run = this.requireRun(runId);
    const job = this.jobsOf(run).find((j) => j.name === name);
    if (!job) throw new HubError(404, `Run ${runId} has no job named ${name}`);
    return { repo: this.repoOf(run), run, job };
  }

  /** `owner/name` of a fork of `repo`; 404 when there is no such repository, 422 when it is not a fork of `repo`. */
  private forkOf(repo: Repo, fullName: string): Repo {
    const [owner, name, ...rest] = fullName.split("/");
    if (!owner || !name || rest.length) throw new HubError(422, `headRepository must be owner/name, not ${fullName}`);
    const head = findRepo(this.hub, owner, name);
    if (head.id === repo.id) return repo;
    if (this.hub.forkParent?.(head)?.id !== repo.id)
      throw new HubError(422, `${fullName} is not a fork of ${repo.owner}/${repo.name}`);
    return head;
  }

  private repoOf(run: Run): Repo {
    const repo = this.hub.repoById(run.repoId);
    if (!repo) throw new HubError(404, "Not Found");
    return repo;
  }

  private workflowFor(repo: Repo, nameOrPath: string, name?: string): Workflow {
    const isPath = nameOrPath.includes("/") || /\.ya?ml$/.test(nameOrPath);
    const existing = this.workflowsOf(repo).find((w) => (isPath ? w.path === nameOrPath : w.name === nameOrPath));
    if (existing) return existing;
    const id = this.hub.nextId();
    const now = this.hub.timestamp();
    const base = isPath
      ? nameOrPath
          .split("/")
          .pop()!
          .replace(/\.ya?ml$/, "")
      : nameOrPath;
    const wf: Workflow = {
      id,
      node_id: this.hub.nodeId("Workflow", id),
      repoId: repo.id,
      name: name ?? (isPath ? base : nameOrPath),
      path: isPath ? nameOrPath : `.github/workflows/${nameOrPath.toLowerCase().replace(/[^a-z0-9]+/g, "-")}.yml`,
      state: "active",
      created_at: now,
      updated_at: now,
    };
    this.workflows.set(id, wf);
    return wf;
  }

  private validateSpecs(specs: JobSpec[]): void {
    const names = new Set(specs.map((s) => s.name));
    if (names.size !== specs.length) throw new HubError(422, "Job names must be unique in a workflow");
    for (const s of specs)
      for (const n of s.needs ?? []) if (!names.has(n)) throw new HubError(422, `Job ${s.name} needs unknown job ${n}`);
  }

  private defaultActor(repo: Repo): string {
    return this.hub.user(repo.owner) ? repo.owner : "octocat";
  }

  private sendRun(repo: Repo, run: Run, action: string): void {
    const payload = {
      action,
      workflow_run: this.runJson(run),
      workflow: this.workflowJson(this.workflows.get(run.workflowId)!),
    };
    this.deliveries.push(() =>
      deliverRepoEvent(this.hub, repo, "workflow_run", payload, this.hub.userJson(this.latest(run).triggering_actor)),
    );
  }

  private sendJob(repo: Repo, job: Job, action: string): void {
    const run = this.runs.get(job.runId)!;
    const payload = { action, workflow_job: this.jobJson(job), deployment: null };
    this.deliveries.push(() => deliverRepoEvent(this.hub, repo, "workflow_job", payload, this.hub.userJson(run.actor)));
  }
}

/** A stable 40-hex commit id for runs on commits the contents store does not know. */
function fakeSha(seed: string): string {
  return createHash("sha1").update(seed).digest("hex");
}
