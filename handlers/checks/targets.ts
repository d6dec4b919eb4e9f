// Which pull request(s) a delivery asks about, read from the payload alone.

export const CHECK_NAME = "steward/config";

export interface PullTarget {
  owner: string;
  repo: string;
  number: number;
  headSha: string;
  /** Base commit; undefined when the payload does not say (then the base branch is read). */
  baseSha: string | undefined;
  baseRef: string;
  /** Head in another repository: its files are read for the report and nothing else. */
  fork: boolean;
  /** `owner/name` of the head repository when the payload says. */
  headRepo?: string;
}

interface PullLike {
  number: number;
  head: { sha: string; ref?: string; repo?: { id?: number; full_name?: string; url?: string } | null };
  base: { sha?: string; ref: string; repo?: { id?: number; full_name?: string } | null };
}

interface Payload {
  action?: string;
  repository?: { id?: number; name: string; full_name?: string; owner: { login: string } };
  pull_request?: PullLike;
  check_suite?: { head_sha: string; pull_requests?: PullLike[] };
  check_run?: { name: string; head_sha: string; app?: { id?: number } | null; pull_requests?: PullLike[] };
}

export type TargetDecision =
  | { kind: "pulls"; targets: PullTarget[] }
  /** A re-run of our run whose payload names no pull request (a fork): look it up by head SHA. */
  | { kind: "lookup"; owner: string; repo: string; headSha: string }
  | { kind: "skip"; reason: string };

const PULL_ACTIONS = new Set(["opened", "synchronize", "reopened"]);

/** The pull requests to check for a delivery, or why there are none. */
export function targetsOf(event: string, payload: Payload, appId: number | undefined): TargetDecision {
  const repository = payload.repository;
  if (!repository) return { kind: "skip", reason: "delivery has no repository" };
  const owner = repository.owner.login;
  const repo = repository.name;
  const toTarget = (p: PullLike, headSha: string): PullTarget => ({
    owner,
    repo,
    number: p.number,
    headSha,
    baseSha: p.base.sha,
    baseRef: p.base.ref,
    fork: isFork(p, repository),
    ...(headRepoName(p) ? { headRepo: headRepoName(p)! } : {}),
  });
  if (event === "pull_request") {
    if (!PULL_ACTIONS.has(payload.action ?? ""))
      return { kind: "skip", reason: `pull_request.${payload.action} does not change the head` };
    const pr = payload.pull_request!;
    return { kind: "pulls", targets: [toTarget(pr, pr.head.sha)] };
  }
  if (event === "check_suite") {
    if (payload.action !== "requested" && payload.action !== "rerequested")
      return { kind: "skip", reason: `check_suite.${payload.action} is not a request` };
    const suite = payload.check_suite!;
    // The API lists the pull requests whose head matches the suite; their own head field may lag.
    const pulls = suite.pull_requests ?? [];
    if (pulls.length === 0)
      return { kind: "skip", reason: "check suite belongs to no pull request of this repository" };
    return { kind: "pulls", targets: pulls.map((p) => toTarget(p, suite.head_sha)) };
  }
  if (event === "check_run") {
    const run = payload.check_run!;
    if (payload.action !== "rerequested")
      return { kind: "skip", reason: `check_run.${payload.action} is not a re-run request` };
    if (run.name !== CHECK_NAME) return { kind: "skip", reason: `check run "${run.name}" is not ${CHECK_NAME}` };
    if (appId !== undefined && run.app?.id !== undefined && run.app.id !== appId)
      return { kind: "skip", reason: "check run belongs to another app" };
    const pulls = run.pull_requests ?? [];
    if (pulls.length === 0) return { kind: "lookup", owner, repo, headSha: run.head_sha };
    return { kind: "pulls", targets: pulls.map((p) => toTarget(p, run.head_sha)) };
  }
  return { kind: "skip", reason: `event ${event} is not handled` };
}

function isFork(p: PullLike, repository: NonNullable<Payload["repository"]>): boolean {
  const head = p.head.repo;
  if (!head) return true; // the fork was deleted
  if (head.id !== undefined && repository.id !== undefined) return head.id !== repository.id;
  return (
    (head.full_name ?? "").toLowerCase() !==
    (repository.full_name ?? `${repository.owner.login}/${repository.name}`).toLowerCase()
  );
}

/** `owner/name` of the head repository: `full_name`, or the tail of its API `url` (check suite payloads). */
function headRepoName(p: PullLike): string | undefined {
  const repo = p.head.repo;
  if (!repo) return undefined;
  if (repo.full_name) return repo.full_name;
  const m = /\/repos\/([^/]+\/[^/]+)$/.exec(repo.url ?? "");
  return m?.[1];
}
