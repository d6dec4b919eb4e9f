// The demo world: organisation `acme` with an admin repository and three service
// repositories, its people, and the app installed with the permissions Steward needs.
import { readFileSync } from "node:fs";
import { packageFile } from "../../package-root.js";
import { parse as parseYaml } from "yaml";
import type { Control } from "../control.js";
import type { Installation } from "../core/types.js";

export const DEMO_ORG = "acme";
export const DEMO_REPO = "web";

/**
 * The permissions and events of Steward's app manifest (`app.yml`), read from the manifest itself:
 * the sandbox then refuses exactly what a real installation of the manifest would, and a handler
 * that needs a permission the manifest lacks fails in the tests, not in production.
 */
const manifest = parseYaml(readFileSync(packageFile("app.yml"), "utf8")) as {
  default_permissions: Record<string, "read" | "write">;
  default_events: string[];
};
export const STEWARD_PERMISSIONS: Record<string, "read" | "write"> = { ...manifest.default_permissions };
export const STEWARD_EVENTS: string[] = [...manifest.default_events];

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
