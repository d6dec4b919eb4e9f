// GraphQL values over the hub's state: repositories, commits (history walks every ancestor,
// newest first, as `Commit.history` does) and the pull requests a commit belongs to (its merge
// commit or one of its head commits).
import { GraphQLError } from "graphql";
import type { HubRequest, Repo } from "../core/types.js";
import type { Commit } from "../git/store.js";
import { labelsOf } from "../issues/labels.js";
import type { PullRequest } from "../pulls/model.js";
import { headSha } from "../pulls/ops.js";
import { mergeCommitOf } from "../pulls/merge.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { connection } from "./connection.js";

type Args = Record<string, unknown>;

function actor(hub: SandboxHub, login: string): Record<string, unknown> {
  const bot = login.endsWith("[bot]");
  const org = !bot && hub.org(login) !== undefined;
  return {
    __typename: bot ? "Bot" : org ? "Organization" : "User",
    id: hub.nodeId(bot ? "BOT_" : "U_", hub.user(login)?.id ?? 0),
    login: bot ? login.slice(0, -5) : login,
    url: `${hub.baseUrl}/${bot ? `apps/${login.slice(0, -5)}` : login}`,
  };
}

/** Ancestors of `sha` (itself included), newest first; ties keep discovery order. */
function ancestors(hub: SandboxHub, repo: Repo, sha: string): Commit[] {
  const git = hub.git(repo);
  const seen = new Set<string>();
  const out: Commit[] = [];
  const queue = [sha];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (seen.has(next)) continue;
    seen.add(next);
    const c = git.commits.get(next);
    if (!c) continue;
    out.push(c);
    queue.push(...c.parents);
  }
  return out
    .map((c, i) => ({ c, i }))
    .sort((a, b) => b.c.date.getTime() - a.c.date.getTime() || a.i - b.i)
    .map((x) => x.c);
}

function pullsOfCommit(hub: SandboxHub, repo: Repo, sha: string): PullRequest[] {
  return (hub.pulls.get(repo.id) ?? []).filter((pr) => {
    if (mergeCommitOf(hub, pr) === sha) return true;
    const headRepo = hub.repoById(pr.headRepoId);
    if (!headRepo) return false;
    const mergeBase = new Set(ancestors(hub, headRepo, pr.mergeBase).map((c) => c.sha));
    return ancestors(hub, headRepo, headSha(hub, pr)).some((c) => c.sha === sha && !mergeBase.has(c.sha));
  });
}

function changedPath(hub: SandboxHub, repo: Repo, c: Commit, path: string): boolean {
  const changes = hub.git(repo).diff(c.parents[0], c.sha);
  return changes.some((ch) => ch.path === path || ch.path.startsWith(`${path.replace(/\/$/, "")}/`));
}

export function repositoryValue(hub: SandboxHub, repo: Repo): Record<string, unknown> {
  return {
    id: hub.nodeId("R_", repo.id),
    name: repo.name,
    nameWithOwner: `${repo.owner}/${repo.name}`,
    url: `${hub.baseUrl}/${repo.owner}/${repo.name}`,
    owner: () => actor(hub, repo.owner),
    object: (args: Args) => {
      const expression = (args.oid ?? args.expression) as string | undefined;
      if (expression === undefined) return null;
      const sha = hub.resolveRef(repo, expression.replace(/^refs\/heads\//, ""));
      const c = sha ? hub.git(repo).commits.get(sha) : undefined;
      return c ? commitValue(hub, repo, c) : null;
    },
  };
}

function gitActor(hub: SandboxHub, c: Commit): Record<string, unknown> {
  return {
    name: c.author.name,
    email: c.author.email,
    date: hub.timestamp(c.date),
    user: c.author.login ? actor(hub, c.author.login) : null,
  };
}

function commitValue(hub: SandboxHub, repo: Repo, c: Commit): Record<string, unknown> {
  return {
    __typename: "Commit",
    id: hub.nodeId("C_", parseInt(c.sha.slice(0, 8), 16)),
    oid: c.sha,
    message: c.message,
    messageHeadline: c.message.split("\n")[0],
    committedDate: hub.timestamp(c.date),
    author: () => gitActor(hub, c),
    committer: () => gitActor(hub, c),
    history: (args: Args) => {
      let list = ancestors(hub, repo, c.sha);
      if (typeof args.since === "string")
        list = list.filter((x) => x.date.getTime() >= Date.parse(args.since as string));
      if (typeof args.until === "string")
        list = list.filter((x) => x.date.getTime() <= Date.parse(args.until as string));
      if (typeof args.path === "string") list = list.filter((x) => changedPath(hub, repo, x, args.path as string));
      const page = connection(list, args);
      return { ...page, nodes: page.nodes.map((x) => commitValue(hub, repo, x)) };
    },
    associatedPullRequests: (args: Args) => {
      const page = connection(pullsOfCommit(hub, repo, c.sha), args);
      return { ...page, nodes: page.nodes.map((pr) => pullValue(hub, pr)) };
    },
  };
}

function pullValue(hub: SandboxHub, pr: PullRequest): Record<string, unknown> {
  const base = hub.repoById(pr.baseRepoId)!;
  const head = hub.repoById(pr.headRepoId);
  return {
    id: pr.node_id,
    number: pr.number,
    title: pr.title,
    body: pr.body ?? "",
    url: `${hub.baseUrl}/${base.owner}/${base.name}/pull/${pr.number}`,
    author: () => actor(hub, pr.user),
    baseRepository: () => repositoryValue(hub, base),
    headRepository: () => (head ? repositoryValue(hub, head) : null),
    baseRefName: pr.baseRef,
    headRefName: pr.headRef,
    isCrossRepository: pr.headRepoId !== pr.baseRepoId,
    merged: pr.merged_at !== null,
    mergedAt: pr.merged_at,
    state: pr.merged_at ? "MERGED" : pr.state === "open" ? "OPEN" : "CLOSED",
    labels: (args: Args) => {
      const names = labelsOf(hub, base.id, pr.number);
      const page = connection(names, args);
      return {
        ...page,
        nodes: page.nodes.map((name) => ({ id: hub.nodeId("LA_", name.length), name, color: "ededed" })),
      };
    },
  };
}

/** `repository(owner, name)`: GitHub's NOT_FOUND error for a repository out of reach. */
export function rootValue(hub: SandboxHub, req: HubRequest): Record<string, unknown> {
  return {
    repository: (args: Args) => {
      const repo = hub.accounts.repoByName(String(args.owner), String(args.name));
      if (!repo || !hub.canSee(req, repo)) {
        throw new GraphQLError(
          `Could not resolve to a Repository with the name '${String(args.owner)}/${String(args.name)}'.`,
          { extensions: { type: "NOT_FOUND" } },
        );
      }
      return repositoryValue(hub, repo);
    },
  };
}
