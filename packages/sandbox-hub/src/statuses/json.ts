// Commit statuses and the combined status as the REST API renders them.
import type { Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";

export type StatusState = "error" | "failure" | "pending" | "success";

export interface CommitStatus {
  id: number;
  repoId: number;
  sha: string;
  state: StatusState;
  context: string;
  description: string | null;
  target_url: string | null;
  creator: string;
  created_at: string;
}

export function statusJson(hub: SandboxHub, repo: Repo, s: CommitStatus): Record<string, unknown> {
  return {
    url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/statuses/${s.sha}`,
    avatar_url: null,
    id: s.id,
    node_id: hub.nodeId("SC_", s.id),
    state: s.state,
    description: s.description,
    target_url: s.target_url,
    context: s.context,
    created_at: s.created_at,
    updated_at: s.created_at,
    creator: hub.userJson(s.creator),
  };
}

/**
 * The latest status per context, and their combination: `failure` if any is error or failure,
 * `pending` if any is pending or there are none, else `success`.
 */
export function combinedJson(
  hub: SandboxHub,
  repo: Repo,
  sha: string,
  newestFirst: CommitStatus[],
): Record<string, unknown> {
  const latest = new Map<string, CommitStatus>();
  for (const s of newestFirst) if (!latest.has(s.context)) latest.set(s.context, s);
  const states = [...latest.values()].map((s) => s.state);
  const state = states.some((s) => s === "error" || s === "failure")
    ? "failure"
    : states.length === 0 || states.includes("pending")
      ? "pending"
      : "success";
  return {
    state,
    statuses: [...latest.values()].map((s) => statusJson(hub, repo, s)),
    sha,
    total_count: latest.size,
    repository: hub.repoJson(repo),
    commit_url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/commits/${sha}`,
    url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/commits/${sha}/status`,
  };
}
