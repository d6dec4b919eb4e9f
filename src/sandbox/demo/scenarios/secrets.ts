// Secrets sync: a policy pushed to the admin repository puts an org secret (selected
// repositories), repository secrets, an environment secret and variables in place; the hub
// opens each sealed value and the demo checks it matches (values are never printed); a second
// sync writes nothing; an out-of-band edit is repaired; a removed entry is pruned; a pull
// request shows the plan.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxStack } from "../../stack.js";
import type { Row, Scenario } from "../types.js";

const ORG = "acme";
const POLICY = ".github/steward/secrets.yml";

/** The admin repository named by the stack's configuration (`name` or `owner/name`). */
function adminRepo(stack: SandboxStack): string {
  return stack.config.adminRepo.split("/").pop()!;
}

async function settle(stack: SandboxStack): Promise<void> {
  await stack.hub.control.settled();
  const engine = (stack.steward as { engine?: { idle?: () => Promise<void> } }).engine;
  await engine?.idle?.();
  await stack.hub.control.settled();
}

function policy(keyFile: string, opts: { withDeployKey: boolean; comment?: string }): string {
  return `# ${opts.comment ?? "secrets policy"}
secrets:
  NPM_TOKEN:
    from: env:STEWARD_DEMO_NPM_TOKEN
    org: { visibility: selected, repositories: [web, api] }
${
  opts.withDeployKey
    ? `  DEPLOY_KEY:
    from: file:${keyFile}
    repositories: ["service-*"]
    environments:
      production: ["service-*"]
`
    : ""
}variables:
  REGION:
    value: eu-west-1
    org: { visibility: all }
  TIER:
    value: gold
    repositories: [api]
prune: true
`;
}

const scenario: Scenario = {
  name: "secrets and variables synced from the admin repository",
  async run(stack, print) {
    const { control, domains } = stack.hub;
    const admin = adminRepo(stack);
    const rows: Row[] = [];
    const dir = await mkdtemp(join(tmpdir(), "steward-demo-secrets-"));
    let restoreExposure = () => {};
    try {
      // Fresh random values: the demo proves they arrive without ever printing them.
      const npmToken = `npm_${randomBytes(12).toString("hex")}`;
      const deployKey = `deploy-key-${randomBytes(12).toString("hex")}`;
      process.env.STEWARD_DEMO_NPM_TOKEN = npmToken;
      // The operator exposes the demo's variable prefix and key directory to the demo organisation only.
      const exposedBefore = process.env.STEWARD_SECRET_SOURCES;
      process.env.STEWARD_SECRET_SOURCES = `${ORG}=env:STEWARD_DEMO_,file:${dir}`;
      restoreExposure = () => {
        if (exposedBefore === undefined) delete process.env.STEWARD_SECRET_SOURCES;
        else process.env.STEWARD_SECRET_SOURCES = exposedBefore;
      };
      const keyFile = join(dir, "deploy_key");
      await writeFile(keyFile, deployKey + "\n", { mode: 0o600 });
      const billing = control.repo(ORG, "service-billing");
      if (billing && !domains.deployments.environment(billing, "production"))
        domains.deployments.putEnvironment(billing, "production");

      const checkOf = (sha: string, name: string) => {
        const repo = control.repo(ORG, admin)!;
        const run = domains.checks.listForSha(repo, sha, { check_name: name })[0];
        return run ? `${name}: ${run.conclusion} (${run.output.title})` : `${name}: none`;
      };
      const writes = () =>
        control.requests().filter((r) => r.method !== "GET" && /\/(secrets|variables)/.test(r.path)).length;

      print(`pushing ${POLICY} to ${ORG}/${admin}`);
      const first = control.pushFiles({
        owner: ORG,
        repo: admin,
        files: { [POLICY]: policy(keyFile, { withDeployKey: true }) },
        message: "Add the secrets policy",
      });
      await settle(stack);
      rows.push({ step: "push the policy", event: "push", result: checkOf(first.sha, "steward/sync") });

      const s = domains.secrets;
      const v = domains.variables;
      const org = s.get({ kind: "org", org: ORG }, "NPM_TOKEN");
      const selectedNames = (org?.selected ?? [])
        .map((id) => stack.hub.hub.repoById(id)?.name)
        .sort()
        .join(", ");
      const opened: [string, string | undefined, string][] = [
        [`org NPM_TOKEN (selected: ${selectedNames})`, s.openedValue({ org: ORG }, "NPM_TOKEN"), npmToken],
        [
          "repo service-billing DEPLOY_KEY",
          s.openedValue({ owner: ORG, repo: "service-billing" }, "DEPLOY_KEY"),
          deployKey,
        ],
        [
          "env service-billing/production DEPLOY_KEY",
          s.openedValue({ owner: ORG, repo: "service-billing", environment: "production" }, "DEPLOY_KEY"),
          deployKey,
        ],
        ["org variable REGION", v.valueIn({ org: ORG }, "REGION"), "eu-west-1"],
        ["repo api variable TIER", v.valueIn({ owner: ORG, repo: "api" }, "TIER"), "gold"],
      ];
      for (const [what, got, want] of opened) {
        rows.push({
          step: `hub opens ${what}`,
          event: "sealed box",
          result: got === undefined ? "missing" : got === want ? "matches the source" : "DIFFERS",
        });
      }

      const before = writes();
      const again = control.pushFiles({
        owner: ORG,
        repo: admin,
        files: { [POLICY]: policy(keyFile, { withDeployKey: true, comment: "reworded comment" }) },
        message: "Reword",
      });
      await settle(stack);
      rows.push({
        step: "sync again, nothing changed",
        event: "push",
        result: `${checkOf(again.sha, "steward/sync")}; ${writes() - before} writes`,
      });

      // A while later (updated_at counts whole seconds), someone edits the secret by hand.
      control.advanceClock(5_000);
      s.setSecretOutOfBand({ owner: ORG, repo: "service-billing" }, "DEPLOY_KEY", "edited by hand");
      const repair = control.pushFiles({
        owner: ORG,
        repo: admin,
        files: { [POLICY]: policy(keyFile, { withDeployKey: true, comment: "after a hand edit" }) },
        message: "Touch",
      });
      await settle(stack);
      const repaired = s.openedValue({ owner: ORG, repo: "service-billing" }, "DEPLOY_KEY") === deployKey;
      rows.push({
        step: "DEPLOY_KEY edited out of band, then sync",
        event: "push",
        result: `${checkOf(repair.sha, "steward/sync")}; ${repaired ? "repaired" : "NOT repaired"}`,
      });

      const pr = control.openPullRequest({
        owner: ORG,
        repo: admin,
        head: "drop-deploy-key",
        title: "Drop DEPLOY_KEY",
        files: { [POLICY]: policy(keyFile, { withDeployKey: false }) },
      });
      await settle(stack);
      rows.push({
        step: `pull request #${pr.number} drops DEPLOY_KEY`,
        event: "pull_request.opened",
        result: checkOf(pr.head_sha, "steward/plan"),
      });
      const kept = s.openedValue({ owner: ORG, repo: "service-billing" }, "DEPLOY_KEY") !== undefined;
      rows.push({
        step: "  ...nothing applied by the plan",
        event: "-",
        result: kept ? "DEPLOY_KEY still in place" : "DEPLOY_KEY GONE",
      });

      const prune = control.pushFiles({
        owner: ORG,
        repo: admin,
        files: { [POLICY]: policy(keyFile, { withDeployKey: false }) },
        message: "Drop DEPLOY_KEY",
      });
      await settle(stack);
      const gone =
        s.openedValue({ owner: ORG, repo: "service-billing" }, "DEPLOY_KEY") === undefined &&
        s.openedValue({ owner: ORG, repo: "service-billing", environment: "production" }, "DEPLOY_KEY") === undefined;
      rows.push({
        step: "push without DEPLOY_KEY (prune: true)",
        event: "push",
        result: `${checkOf(prune.sha, "steward/sync")}; ${gone ? "pruned" : "NOT pruned"}`,
      });
      return rows;
    } finally {
      delete process.env.STEWARD_DEMO_NPM_TOKEN;
      restoreExposure();
      await rm(dir, { recursive: true, force: true });
    }
  },
};

export default scenario;
