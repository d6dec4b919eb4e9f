// What the secrets handler reads: what a delivery asks (its payload, and the files a pull request
// changes), and from the API what secrets and variables exist at a scope, with `updated_at`; the
// repositories an organisation secret is shared with; the installation's repositories.
import type { HandlerContext } from "../../src/index.js";
import { forkOf, type RepoIdentity } from "../shared/fork.js";
import { groupPull, mergeGroupOf } from "../shared/merge-group.js";
import { changedGithubFiles, type PullCommits } from "../shared/pull-files.js";
import { listAll, type Requester } from "./api.js";
import { decideNewRepositories, decidePullRequest, decidePush, isAdminRepo, type Decision } from "./decide.js";
import type { Visibility } from "./policy.js";
import { targetKey, type ActualTarget, type Kind, type RepoRef, type Scope } from "./targets.js";

/** Variables lists answer at most 30 a page; secrets lists 100. */
export const PER_PAGE: Record<Kind, number> = { secret: 100, variable: 30 };

function collection(kind: Kind): string {
  return kind === "secret" ? "secrets" : "variables";
}

/** Path of the scope's collection, e.g. `/repos/acme/web/actions/secrets`. */
export function collectionPath(
  org: string,
  kind: Kind,
  scope: Scope,
): { route: string; params: Record<string, unknown> } {
  const c = collection(kind);
  switch (scope.level) {
    case "org":
      return { route: `/orgs/{org}/actions/${c}`, params: { org } };
    case "repo":
      return { route: `/repos/{owner}/{repo}/actions/${c}`, params: { owner: org, repo: scope.repo } };
    case "env":
      return {
        route: `/repos/{owner}/{repo}/environments/{environment_name}/${c}`,
        params: { owner: org, repo: scope.repo, environment_name: scope.environment },
      };
  }
}

export interface ListedItem {
  name: string;
  updated_at: string;
  value?: string;
  visibility?: Visibility;
}

/** Everything at one scope of one kind. */
export async function readScope(api: Requester, org: string, kind: Kind, scope: Scope): Promise<ActualTarget[]> {
  const { route, params } = collectionPath(org, kind, scope);
  const items = await listAll<ListedItem>(api, `GET ${route}`, params, collection(kind), PER_PAGE[kind]);
  return items.map((item) => actualOf(kind, scope, item));
}

/** A secret or variable as GitHub lists or reads it. */
export function actualOf(kind: Kind, scope: Scope, item: ListedItem): ActualTarget {
  const name = item.name.toUpperCase();
  const t: ActualTarget = { key: targetKey(kind, scope, name), kind, scope, name, updatedAt: item.updated_at };
  if (kind === "variable") t.value = item.value;
  if (scope.level === "org") t.visibility = item.visibility;
  return t;
}

/** Repository ids an org secret or variable with visibility `selected` is shared with, sorted. */
export async function readSelectedRepositories(
  api: Requester,
  org: string,
  kind: Kind,
  name: string,
): Promise<number[]> {
  const path =
    kind === "secret"
      ? "/orgs/{org}/actions/secrets/{name}/repositories"
      : "/orgs/{org}/actions/variables/{name}/repositories";
  const repos = await listAll<{ id: number }>(api, `GET ${path}`, { org, name }, "repositories", 100);
  return repos.map((r) => r.id).sort((a, b) => a - b);
}

/** The installation's repositories owned by `org`. */
export async function readInstallationRepositories(api: Requester, org: string): Promise<RepoRef[]> {
  const repos = await listAll<{ id: number; name: string; archived?: boolean; owner?: { login?: string } }>(
    api,
    "GET /installation/repositories",
    {},
    "repositories",
    100,
  );
  return repos
    .filter((r) => !r.owner?.login || r.owner.login.toLowerCase() === org.toLowerCase())
    .map((r) => ({ id: r.id, name: r.name, archived: r.archived === true }));
}

/** The file names (and former names) a pull request changes under `.github/`, where the secrets document is. */
async function pullRequestFiles(ctx: HandlerContext<any, unknown>, pull: PullCommits): Promise<string[]> {
  return (await changedGithubFiles(ctx.octokit, pull)).flatMap((f) =>
    f.previous_filename ? [f.filename, f.previous_filename] : [f.filename],
  );
}

/** `steward/plan` on a merge group's head: the plan of the pull request it names, at the group's head. */
async function decideMergeGroup(ctx: HandlerContext<any, unknown>, adminRepo: string): Promise<Decision> {
  const group = mergeGroupOf(ctx.payload as never);
  if ("skip" in group) return { decision: "skip", reasons: [group.skip] };
  if (!isAdminRepo(adminRepo, group.owner, group.repo))
    return { decision: "skip", reasons: [`${group.owner}/${group.repo} is not the admin repository`] };
  const pull = await groupPull(ctx.octokit, group);
  const fork = forkOf(pull.head.repo, (ctx.payload as { repository?: RepoIdentity }).repository);
  const facts = {
    action: "checks_requested",
    owner: group.owner,
    repo: group.repo,
    number: group.number,
    headSha: group.headSha,
    headRef: pull.head.ref,
    baseRef: group.baseRef,
    defaultBranch: (ctx.payload as any).repository.default_branch,
    ...(fork === null ? {} : { fork: fork ?? "(unknown head repository)" }),
  };
  const decision = decidePullRequest(
    { ...facts, files: await pullRequestFiles(ctx, { owner: group.owner, repo: group.repo, number: group.number }) },
    adminRepo,
  );
  return decision.decision === "need_files" ? { decision: "skip", reasons: ["files unknown"] } : decision;
}

/**
 * What a delivery asks of the handler: the payload's facts (and, when the decision needs them, the
 * files a pull request changes) handed to decide.ts. The payload is read only in the cases that
 * need it: the engine parses it on first read, and most pull request actions are not triggers.
 */
export async function decideDelivery(ctx: HandlerContext<any, unknown>): Promise<Decision> {
  const adminRepo = ctx.config.adminRepo;
  switch (`${ctx.name}.${ctx.action ?? ""}`.replace(/\.$/, "")) {
    case "push": {
      const p = ctx.payload as any;
      return decidePush(
        {
          ref: p.ref,
          after: p.after,
          deleted: p.deleted === true,
          defaultBranch: p.repository.default_branch ?? p.repository.master_branch,
          owner: p.repository.owner.login ?? p.repository.owner.name,
          repo: p.repository.name,
          commits: p.commits ?? [],
        },
        adminRepo,
      );
    }
    case "pull_request.opened":
    case "pull_request.synchronize":
    case "pull_request.reopened":
    case "pull_request.edited": {
      const p = ctx.payload as any;
      // A head repository that is not this one, or that the payload cannot place, is untrusted.
      const fork = forkOf(p.pull_request.head.repo, p.repository);
      const facts = {
        action: ctx.action!,
        owner: p.repository.owner.login,
        repo: p.repository.name,
        number: p.pull_request.number,
        headSha: p.pull_request.head.sha,
        headRef: p.pull_request.head.ref,
        baseRef: p.pull_request.base.ref,
        defaultBranch: p.repository.default_branch,
        ...(fork === null ? {} : { fork: fork ?? "(unknown head repository)" }),
      };
      const first = decidePullRequest(facts, adminRepo);
      if (first.decision !== "need_files") return first;
      const files = await pullRequestFiles(ctx, {
        owner: facts.owner,
        repo: facts.repo,
        number: facts.number,
        headSha: facts.headSha,
        baseSha: p.pull_request.base.sha,
      });
      const second = decidePullRequest({ ...facts, files }, adminRepo);
      return second.decision === "need_files" ? { decision: "skip", reasons: ["files unknown"] } : second;
    }
    case "merge_group.checks_requested":
      return decideMergeGroup(ctx, adminRepo);
    case "repository.created": {
      const p = ctx.payload as any;
      return decideNewRepositories(p.repository.owner.login, [p.repository.name], "repository.created");
    }
    case "installation_repositories.added": {
      const p = ctx.payload as any;
      return decideNewRepositories(
        p.installation.account.login,
        (p.repositories_added ?? []).map((r: { name: string }) => r.name),
        "installation_repositories.added",
      );
    }
    case "installation.created":
      return {
        decision: "sync",
        org: (ctx.payload as any).installation.account.login,
        reasons: ["installation.created"],
      };
    default:
      return { decision: "skip", reasons: [`${ctx.name}.${ctx.action} is not a secrets trigger`] };
  }
}
