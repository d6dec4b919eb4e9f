// REST routes of environments, deployments, pending deployment reviews and the custom
// deployment protection rule callback.
import type { Hub, HubRequest, Router } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { ActionsDomain } from "../actions/domain.js";
import type { DeploymentsDomain } from "./domain.js";
import { actorOf } from "../core/shared.js";
import { bodyOf, intArray, intParam, invalidField, noContent, ok } from "../core/http.js";

export function installDeploymentsRoutes(
  hub: Hub,
  router: Router,
  deployments: DeploymentsDomain,
  actions: ActionsDomain,
): void {
  const repoOf = (req: HubRequest) => {
    deployments.sweep();
    return hub.requireRepo(req, req.params.owner!, req.params.repo!);
  };
  const env = "/repos/{owner}/{repo}/environments/{environment_name}";
  const anyRead = { auth: "installation-or-user" as const };

  router.add(
    "GET",
    "/repos/{owner}/{repo}/environments",
    (req) => {
      const repo = repoOf(req);
      return hub.paginate(
        req,
        deployments.environmentsOf(repo).map((e) => deployments.environmentJson(repo, e)),
        { wrap: "environments" },
      );
    },
    { ...anyRead, permission: { actions: "read" } },
  );

  router.add(
    "GET",
    env,
    (req) => {
      const repo = repoOf(req);
      return ok(deployments.environmentJson(repo, deployments.requireEnvironment(repo, req.params.environment_name!)));
    },
    { ...anyRead, permission: { actions: "read" } },
  );

  router.add(
    "PUT",
    env,
    (req) => {
      const repo = repoOf(req);
      const body = bodyOf(req);
      const o: Parameters<DeploymentsDomain["putEnvironment"]>[2] = {};
      if (body.wait_timer !== undefined) {
        if (
          !Number.isInteger(body.wait_timer) ||
          (body.wait_timer as number) < 0 ||
          (body.wait_timer as number) > 43200
        )
          throw invalidField("Environment", "wait_timer", "invalid");
        o.wait_timer = body.wait_timer as number;
      }
      if (body.prevent_self_review !== undefined) o.prevent_self_review = body.prevent_self_review === true;
      if (body.reviewers !== undefined && body.reviewers !== null) {
        if (!Array.isArray(body.reviewers) || body.reviewers.length > 6)
          throw invalidField("Environment", "reviewers", "invalid");
        o.reviewers = body.reviewers.map((r: { type?: string; id?: number; login?: string }) => {
          if (r?.type !== "User")
            throw invalidField(
              "Environment",
              "reviewers",
              "invalid",
              "only User reviewers are supported by the sandbox",
            );
          const login = reviewerLogin(hub, r);
          if (!login) throw invalidField("Environment", "reviewers", "invalid", `unknown user id ${String(r.id)}`);
          return login;
        });
      } else if (body.reviewers === null) o.reviewers = [];
      if (body.deployment_branch_policy !== undefined)
        o.deployment_branch_policy = (body.deployment_branch_policy as never) ?? null;
      const e = deployments.putEnvironment(repo, req.params.environment_name!, o);
      return ok(deployments.environmentJson(repo, e));
    },
    { ...anyRead, permission: { administration: "write" } },
  );

  router.add(
    "DELETE",
    env,
    (req) => {
      deployments.deleteEnvironment(repoOf(req), req.params.environment_name!);
      return noContent();
    },
    { ...anyRead, permission: { administration: "write" } },
  );

  router.add(
    "GET",
    `${env}/deployment_protection_rules`,
    (req) => {
      const repo = repoOf(req);
      const e = deployments.requireEnvironment(repo, req.params.environment_name!);
      const rules = e.protectionRules.map((r) => deployments.protectionRuleJson(r));
      return ok({ total_count: rules.length, custom_deployment_protection_rules: rules });
    },
    { ...anyRead, permission: { actions: "read" } },
  );

  router.add(
    "POST",
    `${env}/deployment_protection_rules`,
    (req) => {
      const repo = repoOf(req);
      const e = deployments.requireEnvironment(repo, req.params.environment_name!);
      const integration = bodyOf(req).integration_id;
      if (!Number.isInteger(integration))
        throw invalidField("DeploymentProtectionRule", "integration_id", "missing_field");
      return {
        status: 201,
        body: deployments.protectionRuleJson(deployments.addProtectionRule(e, integration as number)),
      };
    },
    { ...anyRead, permission: { administration: "write" } },
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/deployments",
    (req) => {
      const repo = repoOf(req);
      const list = deployments.listDeployments(repo, {
        sha: req.query.get("sha"),
        ref: req.query.get("ref"),
        task: req.query.get("task"),
        environment: req.query.get("environment"),
      });
      return hub.paginate(
        req,
        list.map((d) => deployments.deploymentJson(repo, d)),
      );
    },
    { ...anyRead, permission: { deployments: "read" } },
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/deployments/{deployment_id}",
    (req) => {
      const repo = repoOf(req);
      return ok(deployments.deploymentJson(repo, deployments.requireDeployment(repo, intParam(req, "deployment_id"))));
    },
    { ...anyRead, permission: { deployments: "read" } },
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/deployments/{deployment_id}/statuses",
    (req) => {
      const repo = repoOf(req);
      const d = deployments.requireDeployment(repo, intParam(req, "deployment_id"));
      return hub.paginate(
        req,
        d.statuses.map((s) => deployments.statusJson(repo, d, s)),
      );
    },
    { ...anyRead, permission: { deployments: "read" } },
  );

  const runPath = "/repos/{owner}/{repo}/actions/runs/{run_id}";

  router.add(
    "GET",
    `${runPath}/pending_deployments`,
    (req) => {
      const repo = repoOf(req);
      const run = actions.requireRun(intParam(req, "run_id"), repo);
      const caller = req.auth.kind === "user" ? { kind: "user", login: req.auth.login } : { kind: req.auth.kind };
      return ok(deployments.pendingGates(run.id).map((g) => deployments.pendingDeploymentJson(repo, g, caller)));
    },
    { ...anyRead, permission: { actions: "read" } },
  );

  // Only a required reviewer (a user) may review; installation tokens are refused (document 001).
  router.add(
    "POST",
    `${runPath}/pending_deployments`,
    (req) => {
      const repo = repoOf(req);
      const run = actions.requireRun(intParam(req, "run_id"), repo);
      const body = bodyOf(req);
      const ids = intArray(body, "environment_ids", "DeploymentReview");
      if (body.state !== "approved" && body.state !== "rejected")
        throw invalidField("DeploymentReview", "state", body.state === undefined ? "missing_field" : "invalid");
      if (typeof body.comment !== "string") throw invalidField("DeploymentReview", "comment", "missing_field");
      const caller =
        req.auth.kind === "user" ? { kind: "user" as const, login: req.auth.login } : { kind: "other" as const };
      const reviewed = deployments.review(repo, run.id, caller, {
        environment_ids: ids,
        state: body.state,
        comment: body.comment,
      });
      return ok(reviewed.map((d) => deployments.deploymentJson(repo, d)));
    },
    { auth: "installation-or-user" },
  );

  // The callback URL a protection-rule app was sent in `deployment_protection_rule.requested`.
  router.add(
    "POST",
    `${runPath}/deployment_protection_rule`,
    (req) => {
      const repo = repoOf(req);
      const run = actions.requireRun(intParam(req, "run_id"), repo);
      const body = bodyOf(req);
      if (typeof body.environment_name !== "string" || body.environment_name.length === 0)
        throw invalidField("DeploymentProtectionRule", "environment_name", "missing_field");
      if (body.state !== undefined && body.state !== "approved" && body.state !== "rejected")
        throw invalidField("DeploymentProtectionRule", "state", "invalid");
      if (body.state === undefined && typeof body.comment !== "string")
        throw invalidField("DeploymentProtectionRule", "comment", "missing_field");
      if (body.comment !== undefined && typeof body.comment !== "string")
        throw invalidField("DeploymentProtectionRule", "comment", "invalid");
      const installation = hub.installationOf(req);
      if (!installation) throw new HubError(403, "Resource not accessible by integration");
      deployments.protectionCallback(
        repo,
        run.id,
        installation.app_id,
        {
          environment_name: body.environment_name,
          state: body.state as "approved" | "rejected" | undefined,
          comment: body.comment as string | undefined,
        },
        actorOf(req.auth),
      );
      return noContent();
    },
    { auth: "installation", permission: { deployments: "write" } },
  );
}

/** A reviewer given by id (the API's form) or login, as a known user's login. */
function reviewerLogin(hub: Hub, r: { id?: number; login?: string }): string | undefined {
  if (typeof r.login === "string" && hub.user(r.login)) return hub.user(r.login)!.login;
  const byId = (hub as Hub & { userById?: (id: number) => { login: string } | undefined }).userById;
  return typeof r.id === "number" ? byId?.call(hub, r.id)?.login : undefined;
}
