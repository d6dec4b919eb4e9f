// Issues, their labels and comments as the REST API renders them (a pull request listed as an
// issue carries `pull_request`).
import type { Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import type { PullRequest } from "../pulls/model.js";
import { commentsOf, type Comment } from "./comments.js";
import { labelsOf } from "./labels.js";
import type { Issue } from "./store.js";

/** A repository by its owner and name, as a route's caller spelled them or as stored. */
type RepoName = Pick<Repo, "owner" | "name">;

export function labelJson(hub: SandboxHub, repo: RepoName, name: string): Record<string, unknown> {
  return {
    name,
    url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/labels/${encodeURIComponent(name)}`,
    color: "ededed",
    default: false,
    description: null,
  };
}

export function issueJson(hub: SandboxHub, repo: Repo, i: Issue | PullRequest): Record<string, unknown> {
  const api = `${hub.baseUrl}/repos/${repo.owner}/${repo.name}`;
  const isPull = "headRef" in i;
  const json: Record<string, unknown> = {
    id: i.id,
    node_id: isPull ? i.node_id : hub.nodeId("I_", i.id),
    url: `${api}/issues/${i.number}`,
    repository_url: api,
    labels_url: `${api}/issues/${i.number}/labels{/name}`,
    comments_url: `${api}/issues/${i.number}/comments`,
    events_url: `${api}/issues/${i.number}/events`,
    html_url: `${hub.baseUrl}/${repo.owner}/${repo.name}/${isPull ? "pull" : "issues"}/${i.number}`,
    number: i.number,
    state: i.state,
    state_reason: isPull ? null : i.state_reason,
    title: i.title,
    body: i.body,
    user: hub.userJson(i.user),
    labels: labelsOf(hub, repo.id, i.number).map((n) => labelJson(hub, repo, n)),
    assignee: null,
    assignees: [],
    milestone: null,
    locked: false,
    comments: commentsOf(hub, repo.id, i.number).length,
    created_at: i.created_at,
    updated_at: i.updated_at,
    closed_at: i.closed_at,
    author_association: hub.accounts.isMember(repo.owner, i.user) ? "MEMBER" : "NONE",
  };
  if (isPull) json.pull_request = { url: `${api}/pulls/${i.number}`, html_url: json.html_url, merged_at: i.merged_at };
  return json;
}

export function commentJson(hub: SandboxHub, repo: RepoName, issueNumber: number, c: Comment): Record<string, unknown> {
  const api = `${hub.baseUrl}/repos/${repo.owner}/${repo.name}`;
  return {
    id: c.id,
    node_id: `IC_${c.id}`,
    url: `${api}/issues/comments/${c.id}`,
    issue_url: `${api}/issues/${issueNumber}`,
    body: c.body,
    user: { login: c.user, type: c.user.endsWith("[bot]") ? "Bot" : "User" },
    created_at: c.created_at,
    updated_at: c.created_at,
    author_association: "NONE",
  };
}
