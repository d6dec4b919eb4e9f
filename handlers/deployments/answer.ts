// The two ways of answering GitHub: the protection-rule callback (installation token) and the
// review of pending deployments (a required reviewer's token). Both go to the configured API
// host only: a callback URL from a payload is never followed with a token.
import { StewardOctokit, type InstallationOctokit, type StewardConfig } from "../../src/index.js";
import type { RepoRef } from "./facts.js";

export type FinalState = "approved" | "rejected";

/** Approve or reject a protection rule, or (no `state`) tell the people watching why it waits. */
export async function answerProtectionRule(
  octokit: InstallationOctokit,
  target: RepoRef & { runId: number },
  answer: { environment: string; state?: FinalState; comment: string },
): Promise<void> {
  await octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule", {
    owner: target.owner,
    repo: target.repo,
    run_id: target.runId,
    environment_name: answer.environment,
    comment: answer.comment,
    ...(answer.state ? { state: answer.state } : {}),
  } as never);
}

export interface PendingDeployment {
  environmentId: number;
  environment: string;
  currentUserCanApprove: boolean;
}

/** Environments of a run waiting for review, as the reviewer sees them. */
export async function listPendingDeployments(
  reviewer: InstallationOctokit,
  target: RepoRef & { runId: number },
): Promise<PendingDeployment[]> {
  const { data } = await reviewer.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
    owner: target.owner,
    repo: target.repo,
    run_id: target.runId,
  });
  return data.flatMap((p) =>
    p.environment?.id !== undefined && p.environment.name !== undefined
      ? [
          {
            environmentId: Number(p.environment.id),
            environment: p.environment.name,
            currentUserCanApprove: p.current_user_can_approve,
          },
        ]
      : [],
  );
}

export async function reviewPendingDeployment(
  reviewer: InstallationOctokit,
  target: RepoRef & { runId: number },
  answer: { environmentId: number; state: FinalState; comment: string },
): Promise<void> {
  await reviewer.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
    owner: target.owner,
    repo: target.repo,
    run_id: target.runId,
    environment_ids: [answer.environmentId],
    state: answer.state,
    comment: answer.comment,
  });
}

/** An Octokit acting as the required reviewer, or undefined when no reviewer token is configured. */
export function reviewerOctokitFrom(config: Readonly<StewardConfig>): InstallationOctokit | undefined {
  if (!config.reviewerToken) return undefined;
  return new StewardOctokit({
    auth: { token: config.reviewerToken },
    baseUrl: config.apiUrl,
    // Requests are logged by the framework's own log; Octokit's default logger would print to the console.
    log: { debug() {}, info() {}, warn() {}, error() {} },
  }) as InstallationOctokit;
}

/** 4xx other than rate limits are answers, not outages: retrying them changes nothing. */
export function isFinalRefusal(error: unknown): error is { status: number; message: string } {
  const status = (error as { status?: unknown })?.status;
  return typeof status === "number" && status >= 400 && status < 500 && status !== 429 && !isRateLimited(error);
}

function isRateLimited(error: unknown): boolean {
  const headers = (error as { response?: { headers?: Record<string, string | undefined> } })?.response?.headers;
  return headers?.["x-ratelimit-remaining"] === "0" || headers?.["retry-after"] !== undefined;
}
