// Reading deliveries: which gate a protection-rule request names, which run waits for review,
// which sha a completed check or deployment status concerns. Pure functions of the payload.
import { forkOf, type RepoIdentity } from "../shared/fork.js";

interface RepoPayload {
  repository?: { id?: number; full_name?: string; name?: string; owner?: { login?: string } };
  installation?: { id?: number };
}

export interface RepoOf {
  owner: string;
  repo: string;
}

export function repoOf(payload: unknown): RepoOf | undefined {
  const p = payload as RepoPayload;
  const owner = p?.repository?.owner?.login;
  const repo = p?.repository?.name;
  return owner && repo ? { owner, repo } : undefined;
}

const CALLBACK_RUN = /\/actions\/runs\/(\d+)\/deployment_protection_rule\/?$/;

export interface ProtectionRequest extends RepoOf {
  environment: string;
  runId: number;
  /** The event that triggered the run (`push`, `pull_request`, ...); undefined in older payloads. */
  event: string | undefined;
  sha: string | undefined;
  ref: string | undefined;
  requestedAt: Date | undefined;
}

/** A `deployment_protection_rule.requested` delivery; undefined when it lacks the environment or run. */
export function protectionRequest(payload: unknown): ProtectionRequest | undefined {
  const repo = repoOf(payload);
  const p = payload as {
    environment?: string;
    event?: string;
    deployment_callback_url?: string;
    sha?: string;
    ref?: string;
    deployment?: { sha?: string; ref?: string; created_at?: string };
    workflow_run?: { id?: number };
    run_id?: number;
  };
  const fromUrl = p.deployment_callback_url
    ? CALLBACK_RUN.exec(new URL(p.deployment_callback_url, "http://x").pathname)?.[1]
    : undefined;
  const runId = fromUrl ? Number(fromUrl) : (p.workflow_run?.id ?? p.run_id);
  if (!repo || !p.environment || !runId) return undefined;
  const created = p.deployment?.created_at ? new Date(p.deployment.created_at) : undefined;
  return {
    ...repo,
    environment: p.environment,
    runId,
    event: typeof p.event === "string" ? p.event : undefined,
    sha: p.sha ?? p.deployment?.sha,
    ref: p.ref ?? p.deployment?.ref,
    requestedAt: created && !Number.isNaN(created.getTime()) ? created : undefined,
  };
}

export interface WaitingRun extends RepoOf {
  runId: number;
  sha: string | undefined;
  ref: string | undefined;
  /** The fork whose code the run runs, null for the repository's own, undefined when the payload does not say (`workflow_job`). */
  fork: string | null | undefined;
}

/**
 * Whether a run may carry a fork's code, from the triggering event alone: only `pull_request*`
 * runs check out a pull request's head (others run the repository's own branches). Unknown
 * (older payloads): maybe.
 */
export function mayRunForkCode(event: string | undefined): boolean {
  return event === undefined || event.startsWith("pull_request");
}

/**
 * A run that waits for review: `workflow_run` or `workflow_job` with status `waiting`, or a
 * `deployment_review.requested`. Undefined for anything else.
 */
export function waitingRun(event: string, action: string | undefined, payload: unknown): WaitingRun | undefined {
  const repo = repoOf(payload);
  if (!repo) return undefined;
  const p = payload as RepoPayload & {
    workflow_run?: {
      id?: number;
      status?: string;
      head_sha?: string;
      head_branch?: string | null;
      head_repository?: RepoIdentity | null;
      repository?: RepoIdentity;
    };
    workflow_job?: { run_id?: number; status?: string; head_sha?: string; head_branch?: string | null };
  };
  const fromRun = (run: NonNullable<typeof p.workflow_run> & { id: number }): WaitingRun => ({
    ...repo,
    runId: run.id,
    sha: run.head_sha,
    ref: run.head_branch ?? undefined,
    fork: forkOf(run.head_repository, run.repository ?? p.repository),
  });
  if (event === "workflow_run" && p.workflow_run?.status === "waiting" && p.workflow_run.id)
    return fromRun({ ...p.workflow_run, id: p.workflow_run.id });
  if (
    event === "workflow_job" &&
    (p.workflow_job?.status === "waiting" || action === "waiting") &&
    p.workflow_job?.run_id
  ) {
    // A job names neither its run's head repository nor its event: the run has to be read.
    return {
      ...repo,
      runId: p.workflow_job.run_id,
      sha: p.workflow_job.head_sha,
      ref: p.workflow_job.head_branch ?? undefined,
      fork: undefined,
    };
  }
  if (event === "deployment_review" && action === "requested" && p.workflow_run?.id)
    return fromRun({ ...p.workflow_run, id: p.workflow_run.id });
  return undefined;
}

/**
 * Deployment states that can settle a wait on `after`: a wait exists only while the deployment
 * waited on is under way (one not made is refused at once), so a status saying it is still under
 * way (queued, in progress: what Steward's own approval of a gate causes) settles nothing.
 */
const FINISHED_DEPLOYMENT = new Set(["success", "failure", "error", "inactive"]);

/** What finished: a check run (by name), a check suite, or a deployment (to an environment). */
export interface Settled {
  sha: string;
  check?: string;
  environment?: string;
}

/** The sha whose waits a completed check run or suite, or a finished deployment's status, may settle, and what finished. */
export function settledBy(event: string, action: string | undefined, payload: unknown): Settled | undefined {
  const p = payload as {
    check_run?: { head_sha?: string; name?: string };
    check_suite?: { head_sha?: string };
    deployment?: { sha?: string; environment?: string };
    deployment_status?: { state?: string; environment?: string };
  };
  if (event === "check_run" && action === "completed" && p.check_run?.head_sha)
    return { sha: p.check_run.head_sha, ...(p.check_run.name !== undefined ? { check: p.check_run.name } : {}) };
  if (event === "check_suite" && action === "completed" && p.check_suite?.head_sha)
    return { sha: p.check_suite.head_sha };
  if (event === "deployment_status" && FINISHED_DEPLOYMENT.has(p.deployment_status?.state ?? "") && p.deployment?.sha) {
    const environment = p.deployment_status?.environment ?? p.deployment.environment;
    return { sha: p.deployment.sha, ...(environment !== undefined ? { environment } : {}) };
  }
  return undefined;
}

/** What an audit entry keeps of a `deployment_review` delivery: who decided what, where and when. */
export function reviewAudit(action: string | undefined, payload: unknown): Record<string, unknown> {
  const p = payload as {
    approver?: { login?: string };
    requestor?: { login?: string };
    sender?: { login?: string };
    comment?: string;
    since?: string;
    environment?: string;
    workflow_run?: { id?: number; head_sha?: string; head_branch?: string | null };
    workflow_job_runs?: { environment?: string }[];
    workflow_job_run?: { environment?: string };
    reviewers?: { reviewer?: { login?: string; slug?: string } }[];
  };
  const repo = repoOf(payload);
  const environments = [
    ...(p.environment ? [p.environment] : []),
    ...(p.workflow_job_runs ?? []).map((j) => j.environment),
    ...(p.workflow_job_run?.environment ? [p.workflow_job_run.environment] : []),
  ].filter((e, i, all): e is string => typeof e === "string" && all.indexOf(e) === i);
  return {
    action: action ?? null,
    repository: repo ? `${repo.owner}/${repo.repo}` : null,
    runId: p.workflow_run?.id ?? null,
    sha: p.workflow_run?.head_sha ?? null,
    ref: p.workflow_run?.head_branch ?? null,
    environments,
    by: p.approver?.login ?? p.requestor?.login ?? p.sender?.login ?? null,
    comment: p.comment ?? null,
    reviewers: (p.reviewers ?? []).map((r) => r.reviewer?.login ?? r.reviewer?.slug).filter(Boolean),
    since: p.since ?? null,
  };
}
