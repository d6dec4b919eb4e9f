// Issues (not pull requests) per repository, and the number sequence issues and pull requests
// share in a repository, as on GitHub.
import type { SandboxHub } from "../sandbox-hub.js";

export interface Issue {
  id: number;
  repoId: number;
  number: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  state_reason: "completed" | "not_planned" | "reopened" | null;
  user: string;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
}

const issuesByHub = new WeakMap<SandboxHub, Issue[]>();

function all(hub: SandboxHub): Issue[] {
  let list = issuesByHub.get(hub);
  if (!list) issuesByHub.set(hub, (list = []));
  return list;
}

export function issuesOf(hub: SandboxHub, repoId: number): Issue[] {
  return all(hub).filter((i) => i.repoId === repoId);
}

/** The next number in a repository: after every issue and pull request so far. */
export function nextIssueNumber(hub: SandboxHub, repoId: number): number {
  const numbers = [
    ...issuesOf(hub, repoId).map((i) => i.number),
    ...(hub.pulls.get(repoId) ?? []).map((p) => p.number),
  ];
  return Math.max(0, ...numbers) + 1;
}

export function createIssue(
  hub: SandboxHub,
  repoId: number,
  fields: { title: string; body: string | null; user: string },
): Issue {
  const id = hub.nextId();
  const now = hub.timestamp();
  const issue: Issue = {
    id,
    repoId,
    number: nextIssueNumber(hub, repoId),
    ...fields,
    state: "open",
    state_reason: null,
    created_at: now,
    updated_at: now,
    closed_at: null,
  };
  all(hub).push(issue);
  return issue;
}
