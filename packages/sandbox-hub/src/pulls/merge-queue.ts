// Merge queues: a pull request added to its base branch's queue becomes a merge group, a temporary
// branch `gh-readonly-queue/{base}/pr-{number}-{base sha}` holding the base plus the pull request's
// changes. GitHub sends `merge_group` `checks_requested` for the group's head commit (workflows with
// `on: merge_group` run there), and `destroyed` (reason merged, invalidated or dequeued) when the
// group goes: its branch is deleted, and on `merged` the base branch moves to the group's head.
import type { SandboxHub } from "../sandbox-hub.js";
import { defaultPusher } from "../git/push.js";
import { findPull, headSha } from "./ops.js";

export interface MergeGroup {
  repoId: number;
  number: number;
  baseRef: string;
  baseSha: string;
  headRef: string;
  headSha: string;
}

export type DestroyReason = "merged" | "invalidated" | "dequeued";

const groups = new WeakMap<SandboxHub, Map<string, MergeGroup>>();

function groupsOf(hub: SandboxHub): Map<string, MergeGroup> {
  let map = groups.get(hub);
  if (!map) groups.set(hub, (map = new Map()));
  return map;
}

function groupJson(hub: SandboxHub, g: MergeGroup): Record<string, unknown> {
  const repo = hub.repoById(g.repoId)!;
  const c = hub.git(repo).commits.get(g.headSha)!;
  const person = { name: c.author.name, email: c.author.email };
  return {
    head_sha: g.headSha,
    head_ref: `refs/heads/${g.headRef}`,
    base_sha: g.baseSha,
    base_ref: `refs/heads/${g.baseRef}`,
    head_commit: {
      id: c.sha,
      tree_id: c.treeSha,
      message: c.message,
      timestamp: hub.timestamp(c.date),
      author: person,
      committer: person,
    },
  };
}

/** Put an open pull request in its base branch's merge queue: the group's branch and `checks_requested`. */
export function enqueuePullRequest(hub: SandboxHub, opts: { owner: string; repo: string; number: number }): MergeGroup {
  const pr = findPull(hub, opts.owner, opts.repo, opts.number);
  if (pr.state !== "open") throw new Error(`pull request #${pr.number} is not open`);
  const repo = hub.repoById(pr.baseRepoId)!;
  const git = hub.git(repo);
  const baseSha = git.branches.get(pr.baseRef)!;
  const headRepo = hub.repoById(pr.headRepoId)!;
  const changes = hub.git(headRepo).diff(pr.mergeBase, headSha(hub, pr));
  const files: Record<string, string | null> = {};
  for (const ch of changes)
    files[ch.path] = ch.after === undefined ? null : hub.git(headRepo).blobs.get(ch.after)!.toString("utf8");
  const headRef = `gh-readonly-queue/${pr.baseRef}/pr-${pr.number}-${baseSha}`;
  const author = defaultPusher(hub, repo.owner);
  const { commit } = git.commit(headRef, files, {
    message: `Merge pull request #${pr.number} from ${pr.headRef}\n\n${pr.title}`,
    author: { name: author, email: `${author}@users.noreply.sandbox.local`, login: author },
    date: hub.now(),
    from: baseSha,
  });
  const group: MergeGroup = {
    repoId: repo.id,
    number: pr.number,
    baseRef: pr.baseRef,
    baseSha,
    headRef,
    headSha: commit.sha,
  };
  groupsOf(hub).set(`${repo.id}:${headRef}`, group);
  hub.effect("merge_group.checks_requested", {
    repository: `${repo.owner}/${repo.name}`,
    head_ref: headRef,
    head_sha: commit.sha,
  });
  void hub.deliver("merge_group", {
    action: "checks_requested",
    merge_group: groupJson(hub, group),
    repository: hub.repoJson(repo),
    organization: hub.orgJson(repo.owner) ?? undefined,
    sender: hub.userJson(author),
  });
  return group;
}

/** End a merge group: delete its branch, move the base on `merged`, send `destroyed`. */
export function destroyMergeGroup(hub: SandboxHub, group: MergeGroup, reason: DestroyReason): void {
  const repo = hub.repoById(group.repoId)!;
  const key = `${repo.id}:${group.headRef}`;
  if (!groupsOf(hub).delete(key)) throw new Error(`no merge group ${group.headRef}`);
  const git = hub.git(repo);
  git.branches.delete(group.headRef);
  if (reason === "merged") git.branches.set(group.baseRef, group.headSha);
  hub.effect("merge_group.destroyed", { repository: `${repo.owner}/${repo.name}`, head_ref: group.headRef, reason });
  const author = defaultPusher(hub, repo.owner);
  void hub.deliver("merge_group", {
    action: "destroyed",
    reason,
    merge_group: groupJson(hub, group),
    repository: hub.repoJson(repo),
    organization: hub.orgJson(repo.owner) ?? undefined,
    sender: hub.userJson(author),
  });
}
