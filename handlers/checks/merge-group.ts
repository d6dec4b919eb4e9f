// `steward/config` on a merge group's head commit: the pull request the group names is checked again,
// its files read at the group's head (where its changes sit on the current base).
import type { InstallationOctokit } from "../../src/index.js";
import { groupPull, mergeGroupOf } from "../shared/merge-group.js";
import { forkOf } from "../shared/fork.js";
import type { PullTarget, TargetDecision } from "./targets.js";

export async function groupTargets(octokit: InstallationOctokit, payload: Parameters<typeof mergeGroupOf>[0] & { repository?: { id?: number; full_name?: string } }): Promise<TargetDecision> {
  const group = mergeGroupOf(payload);
  if ("skip" in group) return { kind: "skip", reason: group.skip };
  const pull = await groupPull(octokit, group);
  const fork = forkOf(pull.head.repo, payload.repository as never);
  const target: PullTarget = {
    owner: group.owner,
    repo: group.repo,
    number: group.number,
    headSha: group.headSha,
    baseSha: group.baseSha,
    baseRef: group.baseRef,
    fork: fork !== null,
    ...(pull.head.repo?.full_name ? { headRepo: pull.head.repo.full_name } : {}),
  };
  return { kind: "pulls", targets: [target] };
}
