// Domain modules of the sandbox hub (actions, deployments, checks, secrets, variables):
// their state, their control functions (returned here; the core exposes them as
// `handle.domains` and under `/_sandbox/domains/`), and their REST routes.
import type { Hub, Router } from "./core/types.js";
import { installActionsRoutes } from "./actions/routes.js";
import { installChecksRoutes } from "./checks/routes.js";
import { installDeploymentsRoutes } from "./deployments/routes.js";
import { installSecretsRoutes } from "./secrets/routes.js";
import { installVariablesRoutes } from "./variables/routes.js";
import { installPropertiesRoutes } from "./properties/routes.js";
import { PropertiesDomain } from "./properties/domain.js";
import { ActionsDomain } from "./actions/domain.js";
import { ChecksDomain } from "./checks/domain.js";
import { DeploymentsDomain } from "./deployments/domain.js";
import { SecretsDomain } from "./secrets/domain.js";
import { DeliveryQueue } from "./core/shared.js";
import { VariablesDomain } from "./variables/domain.js";

export function installDomains(hub: Hub, router: Router) {
  const effects = hub.effects;
  // One queue for every domain: deliveries leave in the order their causes happened.
  const deliveries = new DeliveryQueue();
  const checks = new ChecksDomain(hub, effects, deliveries);
  const deployments = new DeploymentsDomain(hub, effects, deliveries);
  const actions = new ActionsDomain(hub, checks, deployments, effects, deliveries);
  const secrets = new SecretsDomain(hub, effects);
  const variables = new VariablesDomain(hub, effects);
  const properties = new PropertiesDomain(hub, effects);

  installActionsRoutes(hub, router, actions);
  installDeploymentsRoutes(hub, router, deployments, actions);
  installChecksRoutes(hub, router, checks);
  installSecretsRoutes(hub, router, secrets, deployments);
  installVariablesRoutes(hub, router, variables, deployments);
  installPropertiesRoutes(hub, router, properties);

  // Pushes and new pull request heads ask the app for checks (check_suite.requested).
  hub.subscribe?.((event) => {
    if (event.kind === "push" && !/^0+$/.test(event.after)) {
      const branch = event.ref.startsWith("refs/heads/") ? event.ref.slice("refs/heads/".length) : null;
      checks.requestSuite(event.repo, { headSha: event.after, headBranch: branch, before: event.before });
    } else if (
      event.kind === "pull_request" &&
      (event.action === "opened" || event.action === "synchronize" || event.action === "reopened")
    ) {
      checks.requestSuite(event.repo, { headSha: event.head_sha, headBranch: event.head_ref, onlyIfNew: true });
    }
  });

  return {
    actions,
    deployments,
    checks,
    secrets,
    variables,
    properties,
    effects,
    /** Resolves when every scheduled attempt and every delivery the domains queued so far is done. */
    idle: () => actions.idle(),
    /** Errors raised while handing deliveries to the core (a failing webhook endpoint is recorded by the core, not here). */
    deliveryErrors: () => deliveries.errors,
  };
}
export type Domains = ReturnType<typeof installDomains>;
