// Merging a pull request as a user would on the site: the head's changes land on the base branch
// as one merge commit (a `push` delivery), then the pull request closes merged
// (`pull_request.closed` with `merged: true`). The merge commit is remembered per pull request so
// GraphQL's `Commit.associatedPullRequests` finds the pull request from the base branch history.
import type { SandboxHub } from "../sandbox-hub.js";
import { pushFiles } from "../git/push.js";
import { closePullRequest, findPull, headSha } from "./ops.js";
import type { PullRequest } from "./model.js";

const mergeCommits = new WeakMap<SandboxHub, Map<number, string>>();

export function mergeCommitOf(hub: SandboxHub, pr: PullRequest): string | undefined {
  return mergeCommits.get(hub)?.get(pr.id);
}

export function mergePullRequest(
  hub: SandboxHub,
  opts: { owner: string; repo: string; number: number; by?: string },
): { sha: string } {
  const pr = findPull(hub, opts.owner, opts.repo, opts.number);
  if (pr.state !== "open") throw new Error(`pull request #${pr.number} is not open`);
  if (pr.headRepoId !== pr.baseRepoId) throw new Error("merging a pull request from a fork is not simulated");
  const repo = hub.repoById(pr.baseRepoId)!;
  const git = hub.git(repo);
  const head = headSha(hub, pr);
  const files: Record<string, string | null> = {};
  for (const change of git.diff(pr.mergeBase, head)) {
    files[change.path] = change.after === undefined ? null : git.blobs.get(change.after)!.toString("utf8");
  }
  const pushed = pushFiles(hub, {
    owner: repo.owner,
    repo: repo.name,
    branch: pr.baseRef,
    files,
    message: `Merge pull request #${pr.number} from ${repo.owner}/${pr.headRef}\n\n${pr.title}`,
    ...(opts.by ? { pusher: opts.by } : {}),
  });
  let byHub = mergeCommits.get(hub);
  if (!byHub) mergeCommits.set(hub, (byHub = new Map()));
  byHub.set(pr.id, pushed.sha);
  closePullRequest(hub, { owner: opts.owner, repo: opts.repo, number: opts.number, merge: true });
  return { sha: pushed.sha };
}
