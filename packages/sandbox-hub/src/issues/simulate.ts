// Users' actions on issues, simulated from the control API: each sends the delivery GitHub sends
// (`issues.opened`, `issue_comment.created` on an issue or a pull request).
import type { SandboxHub } from "../sandbox-hub.js";
import { issueJson } from "./json.js";
import { notifyIssue } from "./issue-routes.js";
import { addComment } from "./comments.js";
import { createIssue, issuesOf } from "./store.js";

function repoOf(hub: SandboxHub, owner: string, name: string) {
  const repo = hub.accounts.repoByName(owner, name);
  if (!repo) throw new Error(`no repository ${owner}/${name}`);
  return repo;
}

export function openIssue(
  hub: SandboxHub,
  opts: { owner: string; repo: string; title: string; body?: string; author?: string },
): { number: number } {
  const repo = repoOf(hub, opts.owner, opts.repo);
  const author = opts.author ?? "contributor";
  const issue = createIssue(hub, repo.id, { title: opts.title, body: opts.body ?? null, user: author });
  notifyIssue(hub, repo, issue, "opened", author);
  return { number: issue.number };
}

export function commentOnIssue(
  hub: SandboxHub,
  opts: { owner: string; repo: string; number: number; body: string; author?: string },
): { id: number } {
  const repo = repoOf(hub, opts.owner, opts.repo);
  const subject =
    issuesOf(hub, repo.id).find((i) => i.number === opts.number) ??
    hub.pulls.get(repo.id)?.find((p) => p.number === opts.number);
  if (!subject) throw new Error(`no issue or pull request #${opts.number} in ${opts.owner}/${opts.repo}`);
  const author = opts.author ?? "contributor";
  const comment = addComment(hub, repo.id, opts.number, opts.body, author);
  const api = `${hub.baseUrl}/repos/${repo.owner}/${repo.name}`;
  hub.effect("issues.commented", {
    by: `user:${author}`,
    repo: `${repo.owner}/${repo.name}`,
    number: opts.number,
    id: comment.id,
  });
  void hub.deliver("issue_comment", {
    action: "created",
    issue: issueJson(hub, repo, subject),
    comment: {
      id: comment.id,
      node_id: hub.nodeId("IC_", comment.id),
      url: `${api}/issues/comments/${comment.id}`,
      issue_url: `${api}/issues/${opts.number}`,
      html_url: `${hub.baseUrl}/${repo.owner}/${repo.name}/issues/${opts.number}#issuecomment-${comment.id}`,
      body: comment.body,
      user: hub.userJson(author),
      created_at: comment.created_at,
      updated_at: comment.created_at,
      author_association: hub.accounts.isMember(repo.owner, author) ? "MEMBER" : "NONE",
    },
    repository: hub.repoJson(repo),
    sender: hub.userJson(author),
  });
  return { id: comment.id };
}
