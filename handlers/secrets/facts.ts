// API reads: what secrets and variables exist at a scope, with `updated_at`; the repositories
// an organisation secret is shared with; the installation's repositories.
import { listAll, type Requester } from "./api.js";
import type { Visibility } from "./policy.js";
import { targetKey, type ActualTarget, type Kind, type RepoRef, type Scope } from "./targets.js";

/** Variables lists answer at most 30 a page; secrets lists 100. */
export const PER_PAGE: Record<Kind, number> = { secret: 100, variable: 30 };

function collection(kind: Kind): string {
  return kind === "secret" ? "secrets" : "variables";
}

/** Path of the scope's collection, e.g. `/repos/acme/web/actions/secrets`. */
export function collectionPath(org: string, kind: Kind, scope: Scope): { route: string; params: Record<string, unknown> } {
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

interface ListedItem {
  name: string;
  updated_at: string;
  value?: string;
  visibility?: Visibility;
}

/** Everything at one scope of one kind. */
export async function readScope(api: Requester, org: string, kind: Kind, scope: Scope): Promise<ActualTarget[]> {
  const { route, params } = collectionPath(org, kind, scope);
  const items = await listAll<ListedItem>(api, `GET ${route}`, params, collection(kind), PER_PAGE[kind]);
  return items.map((item) => {
    const name = item.name.toUpperCase();
    const t: ActualTarget = { key: targetKey(kind, scope, name), kind, scope, name, updatedAt: item.updated_at };
    if (kind === "variable") t.value = item.value;
    if (scope.level === "org") t.visibility = item.visibility;
    return t;
  });
}

/** Repository ids an org secret or variable with visibility `selected` is shared with, sorted. */
export async function readSelectedRepositories(api: Requester, org: string, kind: Kind, name: string): Promise<number[]> {
  const path = kind === "secret" ? "/orgs/{org}/actions/secrets/{name}/repositories" : "/orgs/{org}/actions/variables/{name}/repositories";
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
