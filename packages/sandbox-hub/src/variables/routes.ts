// REST routes of Actions variables at repository, organisation and environment level: what they
// share with secrets (list, get, delete, organisation variables and their repository selection,
// scoped-values/routes.ts), plus create and update. Lists cap `per_page` at 30.
import type { Hub, Router } from "../core/types.js";
import type { DeploymentsDomain } from "../deployments/domain.js";
import { actorOf } from "../core/shared.js";
import type { VariablesDomain } from "./domain.js";
import { bodyOf, created, noContent } from "../core/http.js";
import { installScopedValueRoutes } from "../scoped-values/routes.js";

export function installVariablesRoutes(
  hub: Hub,
  router: Router,
  variables: VariablesDomain,
  deployments: DeploymentsDomain,
): void {
  installScopedValueRoutes(hub, router, variables, deployments, {
    permissions: { repo: "actions_variables", env: "environments", org: "organization_actions_variables" },
    nameParam: "name",
    maxPerPage: 30,
    own(prefix, resolve, _read, write) {
      router.add(
        "POST",
        `${prefix}/variables`,
        (req) => {
          variables.create(resolve(req).scope, bodyOf(req), actorOf(req.auth));
          return created({});
        },
        { permission: write },
      );
      router.add(
        "PATCH",
        `${prefix}/variables/{name}`,
        (req) => {
          variables.update(resolve(req).scope, req.params.name!, bodyOf(req), actorOf(req.auth));
          return noContent();
        },
        { permission: write },
      );
    },
  });
}
