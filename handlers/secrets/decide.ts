// Which deliveries start a sync, a plan, or nothing. Pure: the handler carries out the decision.
import { SECRETS_DOCUMENT_PATH } from "./policy.js";

export type Decision =
  /** Read, plan and apply for the organisation; `onlyRepos` limits repository scopes. */
  | {
      decision: "sync";
      org: string;
      onlyRepos?: string[];
      report?: { repo: string; headSha: string };
      reasons: string[];
    }
  /**
   * Plan only, shown as the `steward/plan` check of a pull request (nothing applied). With
   * `fork` (the head repository, untrusted) the policy is validated structurally and no plan is
   * computed: a plan resolves sources on this host and compares values with what was written.
   */
  | {
      decision: "plan";
      org: string;
      repo: string;
      headSha: string;
      ref: string;
      pullNumber: number;
      fork?: string;
      reasons: string[];
    }
  | { decision: "skip"; reasons: string[] };

/** `STEWARD_ADMIN_REPO` is `name` (each organisation's own) or `owner/name` (one organisation). */
export function adminRepoFor(adminRepo: string, org: string): string | undefined {
  const [owner, name] = adminRepo.includes("/") ? adminRepo.split("/", 2) : [undefined, adminRepo];
  if (!name) return undefined;
  if (owner !== undefined && owner.toLowerCase() !== org.toLowerCase()) return undefined;
  return name;
}

export function isAdminRepo(adminRepo: string, owner: string, repo: string): boolean {
  return adminRepoFor(adminRepo, owner)?.toLowerCase() === repo.toLowerCase();
}

export interface PushFacts {
  ref: string;
  after: string;
  defaultBranch: string;
  owner: string;
  repo: string;
  deleted: boolean;
  /** Files added, modified or removed by each commit in the payload. */
  commits: { added?: string[]; modified?: string[]; removed?: string[] }[];
}

/** Push payloads list at most 20 commits: a push with that many may hide a policy change. */
const PUSH_COMMITS_SHOWN = 20;

export function decidePush(facts: PushFacts, adminRepo: string): Decision {
  if (!isAdminRepo(adminRepo, facts.owner, facts.repo))
    return { decision: "skip", reasons: [`${facts.owner}/${facts.repo} is not the admin repository`] };
  if (facts.deleted) return { decision: "skip", reasons: ["branch deleted"] };
  if (facts.ref !== `refs/heads/${facts.defaultBranch}`) {
    return { decision: "skip", reasons: [`push to ${facts.ref}, not the default branch ${facts.defaultBranch}`] };
  }
  const touched = facts.commits.some((c) =>
    [...(c.added ?? []), ...(c.modified ?? []), ...(c.removed ?? [])].includes(SECRETS_DOCUMENT_PATH),
  );
  if (!touched && facts.commits.length < PUSH_COMMITS_SHOWN) {
    return { decision: "skip", reasons: [`push does not touch ${SECRETS_DOCUMENT_PATH}`] };
  }
  return {
    decision: "sync",
    org: facts.owner,
    report: { repo: facts.repo, headSha: facts.after },
    reasons: [
      touched
        ? `push to ${facts.defaultBranch} changed ${SECRETS_DOCUMENT_PATH}`
        : "push lists 20+ commits: the policy may have changed",
    ],
  };
}

export interface PullRequestFacts {
  action: string;
  owner: string;
  repo: string;
  number: number;
  headSha: string;
  headRef: string;
  /** Branch it merges into, and the repository's default branch (only that one is synced). */
  baseRef: string;
  defaultBranch: string;
  /** Files the pull request changes; undefined when not read yet. */
  files?: string[];
  /** `owner/name` of the head repository when it is not this one (a fork), else undefined. */
  fork?: string;
}

/**
 * Pull request actions that can change the plan. The handler takes only these: a pull request is
 * labelled, assigned, reviewed or closed far more often than it changes, and a delivery no handler
 * takes is recorded done at the intake instead of being queued, claimed and run to be skipped.
 */
export const PLAN_PULL_REQUEST_ACTIONS = ["opened", "synchronize", "reopened", "edited"] as const;

/** The pull request actions above, and a merge group's `checks_requested` (its head is planned too). */
const PLAN_ACTIONS = new Set<string>([...PLAN_PULL_REQUEST_ACTIONS, "checks_requested"]);

/** First call without `files` to learn whether they are worth reading; then with them. */
export function decidePullRequest(facts: PullRequestFacts, adminRepo: string): Decision | { decision: "need_files" } {
  if (!PLAN_ACTIONS.has(facts.action))
    return { decision: "skip", reasons: [`pull_request.${facts.action} does not change the plan`] };
  if (!isAdminRepo(adminRepo, facts.owner, facts.repo))
    return { decision: "skip", reasons: [`${facts.owner}/${facts.repo} is not the admin repository`] };
  if (facts.baseRef !== facts.defaultBranch)
    return {
      decision: "skip",
      reasons: [`pull request merges into ${facts.baseRef}, not the default branch ${facts.defaultBranch}`],
    };
  if (!facts.files) return { decision: "need_files" };
  if (!facts.files.includes(SECRETS_DOCUMENT_PATH))
    return { decision: "skip", reasons: [`pull request does not change ${SECRETS_DOCUMENT_PATH}`] };
  return {
    decision: "plan",
    org: facts.owner,
    repo: facts.repo,
    headSha: facts.headSha,
    ref: facts.headSha,
    pullNumber: facts.number,
    ...(facts.fork !== undefined ? { fork: facts.fork } : {}),
    reasons: [
      `pull request #${facts.number} changes ${SECRETS_DOCUMENT_PATH}${facts.fork !== undefined ? ` from fork ${facts.fork}` : ""}`,
    ],
  };
}

/** New repositories get their secrets: sync only their scopes (and the org lists that name them). */
export function decideNewRepositories(org: string, repos: string[], why: string): Decision {
  if (repos.length === 0) return { decision: "skip", reasons: [`${why}: no repositories`] };
  return { decision: "sync", org, onlyRepos: repos, reasons: [`${why}: ${repos.join(", ")}`] };
}

/** Slot-based key: a restart re-scheduling the same period keeps one task. */
export function periodicTask(installationId: number, now: Date, intervalMs: number): { key: string; runAt: Date } {
  const slot = Math.floor(now.getTime() / intervalMs) + 1;
  return { key: `secrets/sync/${installationId}/${slot}`, runAt: new Date(slot * intervalMs) };
}
