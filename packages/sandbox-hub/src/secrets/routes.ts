// REST routes of Actions secrets at repository, organisation and environment level: what they
// share with variables (list, get, delete, organisation secrets and their repository selection,
// scoped-values/routes.ts), plus each scope's public key and create-or-update (sealed box). Values are
// never returned.
import type { Hub, HubResponse, Router } from "../core/types.js";
import type { DeploymentsDomain } from "../deployments/domain.js";
import type { SecretsDomain } from "./domain.js";
import { actorOf } from "../core/shared.js";
import { bodyOf, noContent, ok } from "../core/http.js";
import { installScopedValueRoutes } from "../scoped-values/routes.js";

export function installSecretsRoutes(
  hub: Hub,
  router: Router,
  secrets: SecretsDomain,
  deployments: DeploymentsDomain,
): void {
  installScopedValueRoutes(hub, router, secrets, deployments, {
    permissions: { repo: "secrets", env: "secrets", org: "organization_secrets" },
    nameParam: "secret_name",
    own(prefix, resolve, read, write) {
      router.add("GET", `${prefix}/secrets/public-key`, (req) => ok(secrets.publicKeyJson(resolve(req).scope)), {
        permission: read,
      });
      router.add(
        "PUT",
        `${prefix}/secrets/{secret_name}`,
        (req): HubResponse => {
          const result = secrets.put(resolve(req).scope, req.params.secret_name!, bodyOf(req), actorOf(req.auth));
          return result === "created" ? { status: 201, body: {} } : noContent();
        },
        { permission: write },
      );
    },
  });
}
