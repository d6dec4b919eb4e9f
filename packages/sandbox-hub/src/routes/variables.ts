// REST routes of Actions variables at repository, organisation and environment level
// (lists cap `per_page` at 30, document 000 Limits), and organisation variables' repository selection.
import type { Hub, HubRequest, Router } from "../core/types.js";
import type { DeploymentsDomain } from "../domains/deployments.js";
import type { Scope } from "../domains/scopes.js";
import { actorOf } from "../domains/shared.js";
import type { Variable, VariablesDomain } from "../domains/variables.js";
import { bodyOf, created, noContent, ok } from "./http.js";
import { envScope, installSelectionRoutes, orgScope, repoScope } from "./scopes.js";

const VARIABLES_MAX_PER_PAGE = 30;

export function installVariablesRoutes(hub: Hub, router: Router, variables: VariablesDomain, deployments: DeploymentsDomain): void {
  const summary = (v: Variable) => ({ name: v.name, value: v.value, created_at: v.created_at, updated_at: v.updated_at });
  const orgSummary = (org: string, v: Variable) => ({
    ...summary(v),
    visibility: v.visibility,
    selected_repositories_url: `${hub.baseUrl}/orgs/${org}/actions/variables/${v.name}/repositories`,
  });

  const scoped = (
    prefix: string,
    resolve: (req: HubRequest) => { scope: Scope },
    json: (req: HubRequest, v: Variable) => Record<string, unknown>,
    permission: Record<string, "read" | "write">,
    writePermission: Record<string, "read" | "write">,
  ) => {
    router.add("GET", `${prefix}/variables`, (req) => {
      const { scope } = resolve(req);
      return hub.paginate(req, variables.list(scope).map((v) => json(req, v)), { wrap: "variables", maxPerPage: VARIABLES_MAX_PER_PAGE });
    }, { permission });
    router.add("POST", `${prefix}/variables`, (req) => {
      variables.create(resolve(req).scope, bodyOf(req), actorOf(req.auth));
      return created({});
    }, { permission: writePermission });
    router.add("GET", `${prefix}/variables/{name}`, (req) => ok(json(req, variables.require(resolve(req).scope, req.params.name!))), { permission });
    router.add("PATCH", `${prefix}/variables/{name}`, (req) => {
      variables.update(resolve(req).scope, req.params.name!, bodyOf(req), actorOf(req.auth));
      return noContent();
    }, { permission: writePermission });
    router.add("DELETE", `${prefix}/variables/{name}`, (req) => {
      variables.delete(resolve(req).scope, req.params.name!, actorOf(req.auth));
      return noContent();
    }, { permission: writePermission });
  };

  scoped("/repos/{owner}/{repo}/actions", (req) => repoScope(hub, req), (_r, v) => summary(v), { actions_variables: "read" }, { actions_variables: "write" });
  scoped("/repos/{owner}/{repo}/environments/{environment_name}", (req) => envScope(hub, req, deployments), (_r, v) => summary(v), { environments: "read" }, { environments: "write" });
  scoped("/orgs/{org}/actions", (req) => orgScope(hub, req), (req, v) => orgSummary(orgScope(hub, req).org.login, v), { organization_actions_variables: "read" }, { organization_actions_variables: "write" });

  router.add("GET", "/repos/{owner}/{repo}/actions/organization-variables", (req) => {
    const { repo } = repoScope(hub, req);
    return hub.paginate(req, variables.orgVariablesFor(repo).map(summary), { wrap: "variables", maxPerPage: VARIABLES_MAX_PER_PAGE });
  }, { permission: { actions_variables: "read" } });

  installSelectionRoutes(hub, router, "/orgs/{org}/actions/variables/{name}", "name", variables, "Variable", "organization_actions_variables");
}
