// Impact simulation from stored decision facts: real decisions in the sandbox stack first (re-runs,
// deployment answers), then a pull request changing the policy gets the simulation in steward/config,
// and `steward simulate` prints the same from the command line.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import rerun from "../../../handlers/rerun/index.js";
import { checks } from "../../../handlers/index.js";
import {
  deploymentImpact,
  describeDeploymentImpact,
  readDeploymentFacts,
} from "../../../handlers/deployments/simulate.js";
import { simulate } from "../../../src/cli/commands/simulate.js";
import { ORG, newRepo, rerunPosts, settle, startCi, stewardCli, stewardOf } from "../rerun/stack.js";
import { createWorld } from "../deployments/world.js";

let stack: SandboxStack;
let dir: string;
beforeAll(async () => {
  stack = await startSandboxStack({ handlers: [rerun, checks] });
  dir = await mkdtemp(join(tmpdir(), "steward-simulate-"));
});
afterAll(async () => {
  await stack?.close();
  await rm(dir, { recursive: true, force: true });
});

const NETWORK_ONLY = "rerun:\n  enabled: true\n  delay: 0s\n  max_attempts: 2\n  rules:\n    - log: [ECONNRESET]\n";
const ALSO_TIMEOUTS =
  'rerun:\n  enabled: true\n  delay: 0s\n  max_attempts: 2\n  rules:\n    - log: [ECONNRESET, "/timed? ?out/i"]\n';

const simulateCli = (...args: string[]) => stewardCli(stack, "simulate", ...args);

describe("impact simulation", () => {
  it("tells a pull request changing rerun what the new policy would have done with the recorded runs", async () => {
    const { repo, sha } = newRepo(stack, NETWORK_ONLY);
    const { actions } = stack.hub.domains;
    const logs = [
      "read ECONNRESET",
      "Error: connect timed out",
      "AssertionError: expected 1",
      "Timeout waiting for db",
    ];
    for (const log of logs) {
      sha();
      const run = startCi(stack, repo);
      actions.scriptAttempt(run.id, 2, "success");
      actions.failJob({ runId: run.id, job: "integration-db", step: "Test", log });
      await settle(stack);
    }
    expect(rerunPosts(stack, repo)).toEqual(["rerun-failed-jobs 201"]);

    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo,
      head: "timeouts",
      title: "Re-run timeouts too",
      files: { ".github/steward.yml": ALSO_TIMEOUTS },
    });
    await settle(stack);
    const [check] = stack.hub.domains.checks.checkRuns({
      owner: ORG,
      repo,
      sha: pr.head_sha,
      name: "steward/config",
    }) as { conclusion: string; output: { summary: string } }[];
    expect(check!.conclusion).toBe("success");
    expect(check!.output.summary).toContain(
      "### Impact\n\nWith this change, the last 4 failed runs would have been re-run 3 times (was 1).",
    );

    const file = join(dir, "steward.yml");
    await writeFile(file, ALSO_TIMEOUTS);
    const cli = await simulateCli("--policy", file, "--repo", `${ORG}/${repo}`);
    expect(cli).toEqual({
      code: 0,
      out: expect.stringContaining(
        `${ORG}/${repo}: with ${file}, the last 4 failed runs would have been re-run 3 times (was 1)`,
      ),
    });
    await writeFile(file, "rerun:\n  enabled: true\n  max_atempts: 3\n");
    expect(await simulateCli("--policy", file)).toMatchObject({
      code: 1,
      out: expect.stringContaining("has 1 error(s)"),
    });
    expect(await simulateCli("--repo", "x/y")).toMatchObject({
      code: 2,
      out: expect.stringContaining("--policy FILE is required"),
    });
  });

  it("a pull request that does not change rerun or deployments gets no impact section", async () => {
    const { repo } = newRepo(stack, NETWORK_ONLY);
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo,
      head: "checks-only",
      title: "x",
      files: { ".github/steward.yml": `${NETWORK_ONLY}checks:\n  config: true\n` },
    });
    await settle(stack);
    const [check] = stack.hub.domains.checks.checkRuns({
      owner: ORG,
      repo,
      sha: pr.head_sha,
      name: "steward/config",
    }) as { output: { summary: string } }[];
    expect(check!.output.summary).not.toContain("### Impact");
    expect(await stewardOf(stack).store.kv.list(`facts:rerun:${ORG}/${repo}:`)).toEqual([]);
  });

  it("simulates deployment requests from the facts the deployments handler stored", async () => {
    const w = await createWorld();
    try {
      w.pushPolicy("deployments:\n  environments:\n    production:\n      branches: [main]\n");
      w.environment("production", { rule: true });
      w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
      w.startDeploy({ branch: "feature/x", jobs: [{ name: "deploy", environment: "production" }] });
      await w.until(
        () => w.effects("protection_rule.approved").length + w.effects("protection_rule.rejected").length === 2,
        "both answers",
      );
      const records = await readDeploymentFacts(w.steward.store.kv, "acme/web");
      expect(records.map((r) => `${r.request.ref}:${r.last}`).sort()).toEqual(["feature/x:reject", "main:approve"]);

      // A freeze over the moment they were decided: the approved one would have been held.
      const until = new Date(Date.parse(records[0]!.at) + 86_400_000).toISOString();
      const frozen = {
        environments: {
          production: {
            branches: ["main"],
            freeze: [{ from: "2000-01-01T00:00:00Z", to: until, reason: "release freeze" }],
          },
        },
      };
      expect([describeDeploymentImpact(deploymentImpact(frozen, records))]).toEqual([
        "the last 2 deployment requests: 1 held that were approved",
      ]);
      const open = { environments: { production: {} } };
      expect([describeDeploymentImpact(deploymentImpact(open, records))]).toEqual([
        "the last 2 deployment requests: 0 held that were approved, 1 approved that were held or rejected",
      ]);
    } finally {
      await w.close();
    }
  });

  it("applies the organisation gates the decision applied: approve: always under a critical gate approves nothing more", async () => {
    const w = await createWorld({ extraHandlers: [checks] });
    try {
      w.stack.hub.control.pushFiles({
        owner: "acme",
        repo: ".github",
        files: {
          ".github/steward.yml":
            "deployments:\n  environments: {}\n  by_property:\n    - property: tier\n      values: [critical]\n      environments:\n        production:\n          branches: [main]\n",
        },
        message: "organisation gates",
      });
      w.stack.hub.domains.properties.setValues("acme", "web", { tier: "critical" });
      w.pushPolicy("deployments:\n  environments:\n    production:\n      branches: [main]\n");
      w.environment("production", { rule: true });
      w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
      w.startDeploy({ branch: "feature/x", jobs: [{ name: "deploy", environment: "production" }] });
      await w.until(
        () => w.effects("protection_rule.approved").length + w.effects("protection_rule.rejected").length === 2,
        "both answers",
      );
      const records = await readDeploymentFacts(w.steward.store.kv, "acme/web");
      expect(
        records.map((r) => `${r.request.ref}:${r.last}:${(r.gates ?? []).map((g) => g.label).join()}`).sort(),
      ).toEqual(["feature/x:reject:tier: critical", "main:approve:tier: critical"]);

      const loose = "deployments:\n  environments:\n    production:\n      approve: always\n";
      const pr = w.stack.hub.control.openPullRequest({
        owner: "acme",
        repo: "web",
        head: "loosen",
        title: "Deploy freely",
        files: { ".github/steward.yml": loose },
      });
      await w.until(
        () =>
          w.stack.hub.domains.checks.checkRuns({ owner: "acme", repo: "web", sha: pr.head_sha, name: "steward/config" })
            .length > 0,
        "steward/config",
      );
      const [check] = w.stack.hub.domains.checks.checkRuns({
        owner: "acme",
        repo: "web",
        sha: pr.head_sha,
        name: "steward/config",
      }) as { output: { summary: string }; annotations: { message: string }[] }[];
      // The gate still rejects feature/x, as the key's own warning says: nothing would be approved that was not.
      expect(check!.annotations.map((a) => a.message)).toEqual([
        expect.stringContaining("`approve: always` for production has no effect"),
      ]);
      expect(check!.output.summary).toContain(
        "With this change, the last 2 deployment requests: 0 held that were approved.",
      );
      expect(check!.output.summary).not.toContain("approved that were held or rejected");

      // `steward simulate` shares the function.
      expect(
        await simulate(
          w.steward.store.kv,
          { deployments: { environments: { production: { approve: "always" } } } },
          "acme/web",
        ),
      ).toEqual(["the last 2 deployment requests: 0 held that were approved"]);
    } finally {
      await w.close();
    }
  });
});
