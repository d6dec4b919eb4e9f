// Opening pull requests (from a branch or a fork) and keeping them in step with pushes.
import { nextIssueNumber } from "../issues/store.js";
import type { Repo } from "../core/types.js";
import { RepoGit } from "../git/store.js";
import { defaultPusher, pushFiles } from "../git/push.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { pairRenames, type PullRequest } from "./model.js";

export interface OpenPullRequestOptions {
  owner: string;
  repo: string;
  /** Head branch (created from `base` when missing). */
  head: string;
  base?: string;
  /** Files committed on the head branch before opening. */
  files?: Record<string, string | null>;
  title?: string;
  body?: string;
  /** Open from a fork owned by this user (true: `contributor`). */
  fromFork?: boolean | string;
  author?: string;
  draft?: boolean;
}

function headRepo(pr: PullRequest, hub: SandboxHub): Repo {
  return hub.repoById(pr.headRepoId)!;
}

export function headSha(hub: SandboxHub, pr: PullRequest): string {
  return hub.git(headRepo(pr, hub)).branches.get(pr.headRef) ?? pr.mergeBase;
}

function refJson(hub: SandboxHub, repo: Repo, ref: string, sha: string): Record<string, unknown> {
  return { label: `${repo.owner}:${ref}`, ref, sha, user: hub.userJson(repo.owner), repo: hub.repoJson(repo) };
}

export function pullJson(hub: SandboxHub, pr: PullRequest): Record<string, unknown> {
  const base = hub.repoById(pr.baseRepoId)!;
  const full = `${base.owner}/${base.name}`;
  const url = `${hub.baseUrl}/repos/${full}/pulls/${pr.number}`;
  const baseSha = hub.git(base).branches.get(pr.baseRef) ?? pr.mergeBase;
  return {
    url,
    id: pr.id,
    node_id: pr.node_id,
    html_url: `${hub.baseUrl}/${full}/pull/${pr.number}`,
    diff_url: `${hub.baseUrl}/${full}/pull/${pr.number}.diff`,
    patch_url: `${hub.baseUrl}/${full}/pull/${pr.number}.patch`,
    issue_url: `${hub.baseUrl}/repos/${full}/issues/${pr.number}`,
    commits_url: `${url}/commits`,
    review_comments_url: `${url}/comments`,
    review_comment_url: `${hub.baseUrl}/repos/${full}/pulls/comments{/number}`,
    comments_url: `${hub.baseUrl}/repos/${full}/issues/${pr.number}/comments`,
    statuses_url: `${hub.baseUrl}/repos/${full}/statuses/${headSha(hub, pr)}`,
    number: pr.number,
    state: pr.state,
    locked: false,
    title: pr.title,
    user: hub.userJson(pr.user),
    body: pr.body,
    labels: [],
    milestone: null,
    active_lock_reason: null,
    created_at: pr.created_at,
    updated_at: pr.updated_at,
    closed_at: pr.closed_at,
    merged_at: pr.merged_at,
    merge_commit_sha: null,
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    head: refJson(hub, headRepo(pr, hub), pr.headRef, headSha(hub, pr)),
    base: refJson(hub, base, pr.baseRef, baseSha),
    _links: { self: { href: url }, html: { href: `${hub.baseUrl}/${full}/pull/${pr.number}` } },
    author_association: hub.accounts.isMember(base.owner, pr.user) ? "MEMBER" : "CONTRIBUTOR",
    auto_merge: null,
    draft: pr.draft,
    merged: pr.merged_at !== null,
    mergeable: null,
    rebaseable: null,
    mergeable_state: "unknown",
    merged_by: null,
    comments: 0,
    review_comments: 0,
    maintainer_can_modify: false,
    commits: 1,
    additions: 0,
    deletions: 0,
    changed_files: changedFiles(hub, pr).length,
  };
}

export function changedFiles(hub: SandboxHub, pr: PullRequest) {
  return pairRenames(hub.git(headRepo(pr, hub)).diff(pr.mergeBase, headSha(hub, pr)));
}

function forkFor(hub: SandboxHub, base: Repo, owner: string): Repo {
  const existing = hub.accounts.repoByName(owner, base.name);
  if (existing) return existing;
  if (!hub.accounts.account(owner)) hub.accounts.createUser(owner);
  const fork = hub.accounts.createRepo(owner, base.name, {
    private: base.private,
    default_branch: base.default_branch,
    fork: true,
  });
  hub.gits.set(fork.id, RepoGit.forkOf(hub.git(base)));
  hub.forkParents.set(fork.id, base.id);
  return fork;
}

/**
 * As GitHub keeps a fork pull request's head at refs/pull/N/head in the base repository, its
 * commits become readable there (contents API at the head SHA through the base repository).
 */
function mirrorForkHead(hub: SandboxHub, pr: PullRequest): void {
  if (pr.headRepoId === pr.baseRepoId) return;
  const from = hub.git(hub.repoById(pr.headRepoId)!);
  const into = hub.git(hub.repoById(pr.baseRepoId)!);
  for (const [sha, blob] of from.blobs) if (!into.blobs.has(sha)) into.blobs.set(sha, blob);
  for (const [sha, commit] of from.commits) if (!into.commits.has(sha)) into.commits.set(sha, commit);
}

function notifyPull(hub: SandboxHub, pr: PullRequest, action: string, extra: Record<string, unknown> = {}): void {
  const base = hub.repoById(pr.baseRepoId)!;
  mirrorForkHead(hub, pr);
  void hub.deliver("pull_request", {
    action,
    number: pr.number,
    pull_request: pullJson(hub, pr),
    ...extra,
    repository: hub.repoJson(base),
    organization: hub.orgJson(base.owner) ?? undefined,
    sender: hub.userJson(pr.user),
  });
  hub.effect(`pull_request.${action}`, {
    repository: `${base.owner}/${base.name}`,
    number: pr.number,
    head_sha: headSha(hub, pr),
  });
  hub.emit({
    kind: "pull_request",
    action,
    repo: base,
    number: pr.number,
    head_sha: headSha(hub, pr),
    head_ref: pr.headRef,
    base_ref: pr.baseRef,
  });
}

export function openPullRequest(hub: SandboxHub, opts: OpenPullRequestOptions): { number: number; head_sha: string } {
  const base = hub.accounts.repoByName(opts.owner, opts.repo);
  if (!base) throw new Error(`no repository ${opts.owner}/${opts.repo}`);
  const baseRef = opts.base ?? base.default_branch;
  const forkOwner =
    opts.fromFork === true ? "contributor" : typeof opts.fromFork === "string" ? opts.fromFork : undefined;
  const head = forkOwner ? forkFor(hub, base, forkOwner) : base;
  const author = opts.author ?? forkOwner ?? defaultPusher(hub, base.owner);
  const git = hub.git(head);
  const mergeBase = git.branches.get(opts.head)
    ? git.resolve(baseRef, base.default_branch)
    : hub.git(base).branches.get(baseRef);
  if (!mergeBase) throw new Error(`no branch ${baseRef} in ${base.owner}/${base.name}`);
  if (opts.files && Object.keys(opts.files).length > 0) {
    pushFiles(hub, {
      owner: head.owner,
      repo: head.name,
      branch: opts.head,
      files: opts.files,
      pusher: author,
      from: baseRef,
    });
  } else if (!git.branches.has(opts.head)) {
    git.branches.set(opts.head, mergeBase);
  }
  const list = hub.pulls.get(base.id) ?? [];
  hub.pulls.set(base.id, list);
  const id = hub.nextId();
  const now = hub.timestamp();
  const pr: PullRequest = {
    id,
    node_id: hub.nodeId("PR_", id),
    number: nextIssueNumber(hub, base.id),
    title: opts.title ?? `Change ${opts.head}`,
    body: opts.body ?? null,
    state: "open",
    user: author,
    baseRepoId: base.id,
    baseRef,
    headRepoId: head.id,
    headRef: opts.head,
    mergeBase,
    draft: opts.draft ?? false,
    created_at: now,
    updated_at: now,
    closed_at: null,
    merged_at: null,
  };
  list.push(pr);
  notifyPull(hub, pr, "opened");
  return { number: pr.number, head_sha: headSha(hub, pr) };
}

export function findPull(hub: SandboxHub, owner: string, repo: string, number: number): PullRequest {
  const base = hub.accounts.repoByName(owner, repo);
  const pr = base ? hub.pulls.get(base.id)?.find((p) => p.number === number) : undefined;
  if (!pr) throw new Error(`no pull request ${owner}/${repo}#${number}`);
  return pr;
}

/** Push to a pull request's head branch (in its fork when it came from one): `synchronize`. */
export function pushToPullRequest(
  hub: SandboxHub,
  opts: { owner: string; repo: string; number: number; files: Record<string, string | null>; message?: string },
): { sha: string } {
  const pr = findPull(hub, opts.owner, opts.repo, opts.number);
  const head = hub.repoById(pr.headRepoId)!;
  const before = headSha(hub, pr);
  const result = pushFiles(hub, {
    owner: head.owner,
    repo: head.name,
    branch: pr.headRef,
    files: opts.files,
    pusher: pr.user,
    ...(opts.message ? { message: opts.message } : {}),
  });
  pr.updated_at = hub.timestamp();
  notifyPull(hub, pr, "synchronize", { before, after: result.sha });
  return { sha: result.sha };
}

export function closePullRequest(
  hub: SandboxHub,
  opts: { owner: string; repo: string; number: number; merge?: boolean },
): void {
  const pr = findPull(hub, opts.owner, opts.repo, opts.number);
  pr.state = "closed";
  pr.closed_at = hub.timestamp();
  if (opts.merge) pr.merged_at = pr.closed_at;
  pr.updated_at = pr.closed_at;
  notifyPull(hub, pr, "closed");
}
