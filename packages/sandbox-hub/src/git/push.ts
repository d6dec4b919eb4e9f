// Pushes: commit file changes on a branch, then tell the app (a `push` delivery with
// commits[].added/modified/removed) and pull requests whose head moved (`synchronize`).
import type { Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import type { Commit, FileChange } from "./store.js";

export interface PushOptions {
  owner: string;
  repo: string;
  /** Default: the repository's default branch. */
  branch?: string;
  /** path -> new content; `null` removes the file. */
  files: Record<string, string | null>;
  message?: string;
  /** Login of the pusher (default: the first member of the owner, or the owner). */
  pusher?: string;
  /** Branch to start from when `branch` does not exist yet (default: the default branch). */
  from?: string;
}

export interface PushResult {
  sha: string;
  before: string;
  ref: string;
  changes: FileChange[];
}

function email(login: string): string {
  return `${login}@users.noreply.sandbox.local`;
}

/** Repository object as push payloads carry it (timestamps as integers, owner with name/email). */
function pushRepositoryJson(hub: SandboxHub, repo: Repo): Record<string, unknown> {
  const json = hub.repoJson(repo);
  const owner = json.owner as Record<string, unknown>;
  return {
    ...json,
    owner: { ...owner, name: repo.owner, email: null },
    created_at: Math.floor(Date.parse(repo.created_at) / 1000),
    pushed_at: Math.floor(Date.parse(repo.pushed_at) / 1000),
    stargazers: 0,
    master_branch: repo.default_branch,
    organization: hub.org(repo.owner)?.login ?? null,
  };
}

function commitPayload(hub: SandboxHub, repo: Repo, c: Commit, changes: FileChange[]): Record<string, unknown> {
  const person = { name: c.author.name, email: c.author.email, username: c.author.login };
  return {
    id: c.sha,
    tree_id: c.treeSha,
    distinct: true,
    message: c.message,
    timestamp: hub.timestamp(c.date).replace("Z", "+00:00"),
    url: `${hub.baseUrl}/${repo.owner}/${repo.name}/commit/${c.sha}`,
    author: person,
    committer: person,
    added: changes.filter((ch) => ch.status === "added").map((ch) => ch.path),
    removed: changes.filter((ch) => ch.status === "removed").map((ch) => ch.path),
    modified: changes.filter((ch) => ch.status === "modified").map((ch) => ch.path),
  };
}

export function defaultPusher(hub: SandboxHub, owner: string): string {
  const members = hub.accounts.members.get(owner.toLowerCase());
  const first = members ? [...members][0] : undefined;
  return (first && hub.user(first)?.login) ?? owner;
}

export function pushFiles(hub: SandboxHub, opts: PushOptions): PushResult {
  const repo = hub.accounts.repoByName(opts.owner, opts.repo);
  if (!repo) throw new Error(`no repository ${opts.owner}/${opts.repo}`);
  const branch = opts.branch ?? repo.default_branch;
  const pusher = opts.pusher ?? defaultPusher(hub, repo.owner);
  const git = hub.git(repo);
  const from = git.branches.has(branch)
    ? undefined
    : git.resolve(opts.from ?? repo.default_branch, repo.default_branch);
  const { before, commit, changes, created } = git.commit(branch, opts.files, {
    message: opts.message ?? `Update ${Object.keys(opts.files).join(", ")}`,
    author: { name: pusher, email: email(pusher), login: hub.user(pusher) ? pusher : null },
    date: hub.now(),
    ...(from ? { from } : {}),
  });
  repo.pushed_at = hub.timestamp();
  const ref = `refs/heads/${branch}`;
  const head = commitPayload(hub, repo, commit, changes);
  void hub.deliver("push", {
    ref,
    before,
    after: commit.sha,
    repository: pushRepositoryJson(hub, repo),
    pusher: { name: pusher, email: email(pusher) },
    organization: hub.orgJson(repo.owner) ?? undefined,
    sender: hub.userJson(pusher),
    created,
    deleted: false,
    forced: false,
    base_ref: null,
    compare: `${hub.baseUrl}/${repo.owner}/${repo.name}/compare/${before.slice(0, 12)}...${commit.sha.slice(0, 12)}`,
    commits: [head],
    head_commit: head,
  });
  hub.effect("push", { repository: `${repo.owner}/${repo.name}`, ref, before, after: commit.sha });
  hub.emit({ kind: "push", repo, ref, before, after: commit.sha, pusher });
  return { sha: commit.sha, before, ref, changes };
}
