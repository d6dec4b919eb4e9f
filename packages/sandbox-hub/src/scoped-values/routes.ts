// The routes secrets and variables share: resolving a route's scope from its path (organisation,
// repository or environment, each checked against the caller's reach), listing, reading and
// deleting values in each scope, the organisation values a repository can use, and the
// selected-repositories operations of organisation values.
import type { Hub, HubRequest, Org, Repo, Router } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { DeploymentsDomain } from "../deployments/domain.js";
import type { ScopedValue, ScopedValues } from "./values.js";
import type { Scope, SelectionChange } from "./scopes.js";
import { actorOf } from "../core/shared.js";
import { bodyOf, noContent, ok } from "../core/http.js";

export function requireOrg(hub: Hub, req: HubRequest): Org {
  const login = req.params.org!;
  if (hub.requireOrg) return hub.requireOrg(req, login);
  const org = hub.org(login);
  if (!org || hub.installationOf(req)?.account.toLowerCase() !== org.login.toLowerCase())
    throw new HubError(404, "Not Found");
  return org;
}

export function orgScope(hub: Hub, req: HubRequest): { org: Org; scope: Scope } {
  const org = requireOrg(hub, req);
  return { org, scope: { kind: "org", org: org.login } };
}

export function repoScope(hub: Hub, req: HubRequest): { repo: Repo; scope: Scope } {
  const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
  return { repo, scope: { kind: "repo", repoId: repo.id } };
}

/** Environment scope: the environment must exist (404 otherwise). */
export function envScope(hub: Hub, req: HubRequest, deployments: DeploymentsDomain): { repo: Repo; scope: Scope } {
  const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
  const env = deployments.requireEnvironment(repo, req.params.environment_name!);
  return { repo, scope: { kind: "env", repoId: repo.id, environment: env.name } };
}

/** A repository id of the organisation (for the selected-repositories operations). */
export function orgRepoId(hub: Hub, org: Org, raw: string | undefined): number {
  const id = /^\d+$/.test(raw ?? "") ? Number(raw) : NaN;
  const repo = hub.repoById(id);
  if (!repo || repo.owner.toLowerCase() !== org.login.toLowerCase()) throw new HubError(404, "Not Found");
  return id;
}

/** `selected_repository_ids` of a set-repositories body, each a repository of the organisation (else 422). */
export function selectedIds(hub: Hub, org: Org, body: Record<string, unknown>, resource: string): number[] {
  const ids = body.selected_repository_ids;
  if (!Array.isArray(ids) || !ids.every((i) => Number.isInteger(i))) {
    throw new HubError(422, "Validation Failed", [
      { resource, field: "selected_repository_ids", code: ids === undefined ? "missing_field" : "invalid" },
    ]);
  }
  const known = new Set(hub.reposOf(org.login).map((r) => r.id));
  const unknown = (ids as number[]).filter((i) => !known.has(i));
  if (unknown.length > 0)
    throw new HubError(422, "Validation Failed", [
      {
        resource,
        field: "selected_repository_ids",
        code: "invalid",
        message: `Unknown repository ids: ${unknown.join(", ")}`,
      },
    ]);
  return ids as number[];
}

type Permission = Record<string, "read" | "write">;
type Resolve = (req: HubRequest) => { scope: Scope };

export interface ScopedRoutesOptions {
  /** The installation permission of each scope's routes (read to read, write to change). */
  permissions: { repo: string; env: string; org: string };
  /** The path parameter naming a value: `secret_name`, `name`. */
  nameParam: string;
  /** Largest `per_page` of the lists, when smaller than the API's usual 100. */
  maxPerPage?: number;
  /** The routes of one kind only (writes, the public key), added before the shared ones of each scope. */
  own(prefix: string, resolve: Resolve, read: Permission, write: Permission): void;
}

/**
 * `GET {scope}/{area}`, `GET` and `DELETE {scope}/{area}/{name}` in the repository, environment
 * and organisation scopes, `GET /repos/{owner}/{repo}/actions/organization-{area}`, and the
 * organisation values' selected-repositories routes.
 */
export function installScopedValueRoutes<T extends ScopedValue>(
  hub: Hub,
  router: Router,
  values: ScopedValues<T>,
  deployments: DeploymentsDomain,
  o: ScopedRoutesOptions,
): void {
  const { area } = values.kind;
  const page = { wrap: area, ...(o.maxPerPage ? { maxPerPage: o.maxPerPage } : {}) };
  const scopes: [string, Resolve, string][] = [
    ["/repos/{owner}/{repo}/actions", (req) => repoScope(hub, req), o.permissions.repo],
    [
      "/repos/{owner}/{repo}/environments/{environment_name}",
      (req) => envScope(hub, req, deployments),
      o.permissions.env,
    ],
    ["/orgs/{org}/actions", (req) => orgScope(hub, req), o.permissions.org],
  ];
  for (const [prefix, resolve, permission] of scopes) {
    const read: Permission = { [permission]: "read" };
    const write: Permission = { [permission]: "write" };
    o.own(prefix, resolve, read, write);
    router.add(
      "GET",
      `${prefix}/${area}`,
      (req) => {
        const { scope } = resolve(req);
        return hub.paginate(
          req,
          values.list(scope).map((v) => values.json(scope, v)),
          page,
        );
      },
      { permission: read },
    );
    router.add(
      "GET",
      `${prefix}/${area}/{${o.nameParam}}`,
      (req) => {
        const { scope } = resolve(req);
        return ok(values.json(scope, values.require(scope, req.params[o.nameParam]!)));
      },
      { permission: read },
    );
    router.add(
      "DELETE",
      `${prefix}/${area}/{${o.nameParam}}`,
      (req) => {
        values.delete(resolve(req).scope, req.params[o.nameParam]!, actorOf(req.auth));
        return noContent();
      },
      { permission: write },
    );
  }

  router.add(
    "GET",
    `/repos/{owner}/{repo}/actions/organization-${area}`,
    (req) => {
      const { repo } = repoScope(hub, req);
      return hub.paginate(
        req,
        values.reaching(repo).map((v) => values.json({ kind: "repo", repoId: repo.id }, v)),
        page,
      );
    },
    { permission: { [o.permissions.repo]: "read" } },
  );

  installSelectionRoutes(
    hub,
    router,
    `/orgs/{org}/actions/${area}/{${o.nameParam}}`,
    o.nameParam,
    values,
    values.kind.resource,
    o.permissions.org,
  );
}

/** `GET/PUT {prefix}/repositories` and `PUT/DELETE {prefix}/repositories/{repository_id}` (409 unless visibility is selected). */
function installSelectionRoutes(
  hub: Hub,
  router: Router,
  prefix: string,
  nameParam: string,
  store: Pick<ScopedValues<ScopedValue>, "requireSelectable" | "changeSelection">,
  resource: string,
  permission: string,
): void {
  const sel = `${prefix}/repositories`;
  const change = (req: HubRequest, make: (org: Org) => SelectionChange) => {
    const org = requireOrg(hub, req);
    store.changeSelection(org.login, req.params[nameParam]!, make(org), actorOf(req.auth));
    return noContent();
  };
  router.add(
    "GET",
    sel,
    (req) => {
      const org = requireOrg(hub, req);
      const item = store.requireSelectable(org.login, req.params[nameParam]!);
      const repos = item.selected
        .map((id) => hub.repoById(id))
        .filter((r) => r !== undefined)
        .map((r) => hub.repoJson(r));
      return hub.paginate(req, repos, { wrap: "repositories" });
    },
    { permission: { [permission]: "read" } },
  );
  router.add("PUT", sel, (req) => change(req, (org) => ({ set: selectedIds(hub, org, bodyOf(req), resource) })), {
    permission: { [permission]: "write" },
  });
  router.add(
    "PUT",
    `${sel}/{repository_id}`,
    (req) => change(req, (org) => ({ add: orgRepoId(hub, org, req.params.repository_id) })),
    { permission: { [permission]: "write" } },
  );
  router.add(
    "DELETE",
    `${sel}/{repository_id}`,
    (req) => change(req, (org) => ({ remove: orgRepoId(hub, org, req.params.repository_id) })),
    { permission: { [permission]: "write" } },
  );
}
