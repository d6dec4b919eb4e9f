// The demo world: organisation `acme` with an admin repository and three service
// repositories, its people, and the app installed with the permissions Steward needs.
import type { Control } from "../control.js";
import type { Installation } from "../core/types.js";

export const DEMO_ORG = "acme";
export const DEMO_REPO = "web";

/** Permissions of Steward's app manifest. */
export const STEWARD_PERMISSIONS: Record<string, "read" | "write"> = {
  actions: "write",
  actions_variables: "write",
  administration: "read",
  checks: "write",
  contents: "read",
  deployments: "write",
  environments: "write",
  metadata: "read",
  members: "read",
  organization_actions_variables: "write",
  organization_secrets: "write",
  pull_requests: "read",
  secrets: "write",
  statuses: "write",
};

export const STEWARD_EVENTS = [
  "check_run",
  "check_suite",
  "deployment",
  "deployment_protection_rule",
  "deployment_review",
  "deployment_status",
  "pull_request",
  "push",
  "repository",
  "workflow_job",
  "workflow_run",
];

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

export function seedDemo(control: Control): Installation {
  control.createOrg(DEMO_ORG, { members: ["octo-admin", "release-manager", "dev-dana"] });
  control.createUser("contributor");
  control.createRepo({ owner: DEMO_ORG, name: ".github", private: true, files: { "profile/README.md": "# Acme\n" } });
  control.createRepo({
    owner: DEMO_ORG,
    name: "web",
    files: {
      "package.json": JSON.stringify({ name: "web", version: "1.0.0", scripts: { test: "node --test" } }, null, 2) + "\n",
      "src/index.js": "export const hello = () => 'hello';\n",
      ".github/workflows/ci.yml": CI_WORKFLOW,
      ".github/workflows/deploy.yml": DEPLOY_WORKFLOW,
    },
  });
  control.createRepo({
    owner: DEMO_ORG,
    name: "api",
    private: true,
    files: { "go.mod": "module acme/api\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n", ".github/workflows/ci.yml": CI_WORKFLOW },
  });
  control.createRepo({
    owner: DEMO_ORG,
    name: "service-billing",
    private: true,
    files: { "pyproject.toml": "[project]\nname = \"billing\"\n", ".github/workflows/ci.yml": CI_WORKFLOW, ".github/workflows/deploy.yml": DEPLOY_WORKFLOW },
  });
  return control.install(DEMO_ORG, { permissions: STEWARD_PERMISSIONS, repositories: "all", events: STEWARD_EVENTS });
}
