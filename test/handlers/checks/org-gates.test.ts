// steward/config and the organisation's deployment gates: a pull request whose repository policy
// tries to loosen a gate the organisation sets for the repository's custom property is told so at
// the key (a warning: the gate applies all the same), through the sandbox hub.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { checks } from "../../../handlers/index.js";
import { configRuns as configRunsOf, settle as settleStack } from "./config-stack.js";
import { createDeploymentsHandler } from "../../../handlers/deployments/index.js";

const ORG = "acme";
const FILE = ".github/steward.yml";
let stack: SandboxStack;

const settle = () => settleStack(stack);
const configRuns = (repo: string, sha: string) => configRunsOf(stack, ORG, repo, sha);

beforeAll(async () => {
  stack = await startSandboxStack({ handlers: [checks, createDeploymentsHandler()] });
  stack.hub.control.pushFiles({
    owner: ORG,
    repo: ".github",
    files: {
      [FILE]:
        "deployments:\n  environments: {}\n  by_property:\n    - property: tier\n      values: [critical]\n      environments:\n        production:\n          branches: [main]\n          pending_checks: reject\n",
    },
    message: "organisation gates",
  });
  await settle();
});
afterAll(async () => {
  await stack?.close();
});

describe("steward/config under organisation gates", () => {
  it("warns at each key of a critical repository's file that tries to loosen the gate", async () => {
    stack.hub.domains.properties.setValues(ORG, "web", { tier: "critical" });
    const text =
      "deployments:\n  environments:\n    production:\n      approve: always\n    staging:\n      branches: ['*']\n";
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "loosen",
      title: "Deploy freely",
      files: { [FILE]: text },
    });
    await settle();
    const [run] = configRuns("web", pr.head_sha);
    expect(run?.conclusion).toBe("success");
    expect(run!.output.title).toContain("1 warning");
    expect(
      run!.annotations.map((a) => `${a.path}:${a.start_line}:${a.start_column} ${a.annotation_level} ${a.message}`),
    ).toEqual([
      `${FILE}:4:16 warning \`approve: always\` for production has no effect: the organisation gates production for repositories with tier: critical`,
    ]);

    const worse = stack.hub.control.pushToPullRequest({
      owner: ORG,
      repo: "web",
      number: pr.number,
      files: {
        [FILE]:
          "deployments:\n  environments:\n    production:\n      branches: [main, 'release/*']\n      pending_checks: wait\n",
      },
    });
    await settle();
    const [again] = configRuns("web", worse.sha);
    expect(again!.annotations.map((a) => `${a.start_line}:${a.start_column} ${a.message}`)).toEqual([
      "4:17 branches `release/*` may not deploy to production all the same: the organisation gates production for repositories with tier: critical (allowed: `main`)",
      "5:23 `pending_checks: wait` for production has no effect (the gate says reject): the organisation gates production for repositories with tier: critical",
    ]);
  });

  it("says nothing for a repository without the property, or one that only tightens", async () => {
    stack.hub.domains.properties.setValues(ORG, "api", { tier: "standard" });
    const loose = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "api",
      head: "loose",
      title: "Deploy freely",
      files: { [FILE]: "deployments:\n  environments:\n    production:\n      approve: always\n" },
    });
    stack.hub.domains.properties.setValues(ORG, "service-billing", { tier: "critical" });
    const tight = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "service-billing",
      head: "tight",
      title: "Tighten",
      files: {
        [FILE]:
          "deployments:\n  environments:\n    production:\n      branches: [main]\n      checks: [build]\n      approve: never\n",
      },
    });
    await settle();
    expect(configRuns("api", loose.head_sha)[0]!.annotations).toEqual([]);
    const [tightRun] = configRuns("service-billing", tight.head_sha);
    expect(tightRun!.annotations.filter((a) => a.message.includes("organisation gates"))).toEqual([]);
  });
});
