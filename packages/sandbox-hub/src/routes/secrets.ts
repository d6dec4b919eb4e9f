// REST routes of Actions secrets: public keys, create-or-update (sealed box), list, get,
// delete at repository, organisation and environment level, and organisation secrets'
// repository selection. Values are never returned.
import type { Hub, HubRequest, HubResponse, Router } from "../core/types.js";
import type { DeploymentsDomain } from "../domains/deployments.js";
import type { Scope } from "../domains/scopes.js";
import type { Secret, SecretsDomain } from "../domains/secrets.js";
import { actorOf } from "../domains/shared.js";
import { bodyOf, noContent, ok } from "./http.js";
import { envScope, installSelectionRoutes, orgScope, repoScope } from "./scopes.js";

export function installSecretsRoutes(hub: Hub, router: Router, secrets: SecretsDomain, deployments: DeploymentsDomain): void {
  const summary = (s: Secret) => ({ name: s.name, created_at: s.created_at, updated_at: s.updated_at });
  const orgSummary = (org: string, s: Secret) => ({
    ...summary(s),
    visibility: s.visibility,
    selected_repositories_url: `${hub.baseUrl}/orgs/${org}/actions/secrets/${s.name}/repositories`,
  });

  /** The five routes every scope has; `json` renders one secret for that scope. */
  const scoped = (
    prefix: string,
    resolve: (req: HubRequest) => { scope: Scope },
    json: (req: HubRequest, s: Secret) => Record<string, unknown>,
    permission: Record<string, "read" | "write">,
    writePermission: Record<string, "read" | "write">,
  ) => {
    router.add("GET", `${prefix}/secrets/public-key`, (req) => ok(secrets.publicKeyJson(resolve(req).scope)), { permission });
    router.add("GET", `${prefix}/secrets`, (req) => {
      const { scope } = resolve(req);
      return hub.paginate(req, secrets.list(scope).map((s) => json(req, s)), { wrap: "secrets" });
    }, { permission });
    router.add("GET", `${prefix}/secrets/{secret_name}`, (req) => {
      const { scope } = resolve(req);
      if (req.params.secret_name === "public-key") return ok(secrets.publicKeyJson(scope));
      return ok(json(req, secrets.require(scope, req.params.secret_name!)));
    }, { permission });
    router.add("PUT", `${prefix}/secrets/{secret_name}`, (req): HubResponse => {
      const { scope } = resolve(req);
      const result = secrets.put(scope, req.params.secret_name!, bodyOf(req), actorOf(req.auth));
      return result === "created" ? { status: 201, body: {} } : noContent();
    }, { permission: writePermission });
    router.add("DELETE", `${prefix}/secrets/{secret_name}`, (req) => {
      secrets.delete(resolve(req).scope, req.params.secret_name!, actorOf(req.auth));
      return noContent();
    }, { permission: writePermission });
  };

  scoped("/repos/{owner}/{repo}/actions", (req) => repoScope(hub, req), (_req, s) => summary(s), { secrets: "read" }, { secrets: "write" });
  scoped("/repos/{owner}/{repo}/environments/{environment_name}", (req) => envScope(hub, req, deployments), (_req, s) => summary(s), { secrets: "read" }, { secrets: "write" });
  scoped("/orgs/{org}/actions", (req) => orgScope(hub, req), (req, s) => orgSummary(orgScope(hub, req).org.login, s), { organization_secrets: "read" }, { organization_secrets: "write" });

  router.add("GET", "/repos/{owner}/{repo}/actions/organization-secrets", (req) => {
    const { repo } = repoScope(hub, req);
    return hub.paginate(req, secrets.orgSecretsFor(repo).map(summary), { wrap: "secrets" });
  }, { permission: { secrets: "read" } });

  installSelectionRoutes(hub, router, "/orgs/{org}/actions/secrets/{secret_name}", "secret_name", secrets, "Secret", "organization_secrets");
}
