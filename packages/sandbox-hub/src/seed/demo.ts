// The demo world: organisation `acme` with an admin repository and three service
// repositories, its people, and the app installed with the grant its manifest asks for.
import type { Control } from "../control.js";
import type { Installation } from "../core/types.js";

export const DEMO_ORG = "acme";
export const DEMO_REPO = "web";

/** What the installed app may do and hear: an app manifest's `default_permissions` and `default_events`. */
export interface AppGrant {
  permissions: Record<string, "read" | "write">;
  events: string[];
}

/**
 * Used when the caller names no manifest: everything the hub implements, so a general app can be
 * tried. An app that wants the hub to refuse what its real installation would refuse passes its
 * own manifest's grant (`createHub({ app })`).
 */
export const BROAD_GRANT: AppGrant = {
  permissions: {
    actions: "write",
    checks: "write",
    contents: "write",
    pull_requests: "write",
    issues: "write",
    deployments: "write",
    environments: "write",
    secrets: "write",
    actions_variables: "write",
    organization_secrets: "write",
    organization_actions_variables: "write",
    statuses: "write",
    metadata: "read",
    organization_custom_properties: "read",
  },
  events: [
    "check_run",
    "check_suite",
    "pull_request",
    "push",
    "workflow_run",
    "workflow_job",
    "deployment_protection_rule",
    "deployment_review",
    "deployment_status",
    "repository",
    "installation",
    "installation_repositories",
    "issues",
    "issue_comment",
    "release",
    "status",
  ],
};

const CI_WORKFLOW = `name: CI
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: npm ci
      - run: npm test
`;

const DEPLOY_WORKFLOW = `name: Deploy
on:
  push:
    branches: [main]
jobs:
  deploy:
    runs-on: ubuntu-latest
    environment: production
    steps:
      - run: ./deploy.sh
`;

export function seedDemo(control: Control, app: AppGrant = BROAD_GRANT): Installation {
  control.createOrg(DEMO_ORG, { members: ["octo-admin", "release-manager", "dev-dana"], owners: ["octo-admin"] });
  control.createUser("contributor");
  control.createRepo({ owner: DEMO_ORG, name: ".github", private: true, files: { "profile/README.md": "# Acme\n" } });
  control.createRepo({
    owner: DEMO_ORG,
    name: "web",
    files: {
      "package.json":
        JSON.stringify({ name: "web", version: "1.0.0", scripts: { test: "node --test" } }, null, 2) + "\n",
      "src/index.js": "export const hello = () => 'hello';\n",
      ".github/workflows/ci.yml": CI_WORKFLOW,
      ".github/workflows/deploy.yml": DEPLOY_WORKFLOW,
    },
  });
  control.createRepo({
    owner: DEMO_ORG,
    name: "api",
    private: true,
    files: {
      "go.mod": "module acme/api\n\ngo 1.22\n",
      "main.go": "package main\n\nfunc main() {}\n",
      ".github/workflows/ci.yml": CI_WORKFLOW,
    },
  });
  control.createRepo({
    owner: DEMO_ORG,
    name: "service-billing",
    private: true,
    files: {
      "pyproject.toml": '[project]\nname = "billing"\n',
      ".github/workflows/ci.yml": CI_WORKFLOW,
      ".github/workflows/deploy.yml": DEPLOY_WORKFLOW,
    },
  });
  // Billing is private to its team: dev-dana, a member, does not reach it.
  control.restrictRepo(DEMO_ORG, "service-billing", ["release-manager"]);
  return control.install(DEMO_ORG, {
    permissions: { ...app.permissions },
    repositories: "all",
    events: [...app.events],
  });
}
