// Policy checks on pull requests: a pull request adds a Steward policy with a typo'd key and a
// bad glob; `steward/config` fails with one annotation on each line. Fixing both in a second
// push turns the check green, and its summary shows what the policy changes.
import type { SandboxStack } from "../../stack.js";
import type { Row, Scenario } from "../types.js";

const OWNER = "acme";
const REPO = "web";
const FILE = ".github/steward.yml";
const CHECK = "steward/config";

const BROKEN = `checks:
  config: true
deployments:
  environments:
    staging:
      branchs: [main]
    production:
      branches: ["release/[0-9"]
`;

const FIXED = `checks:
  config: true
deployments:
  environments:
    staging:
      branches: [main]
    production:
      branches: ["release/*"]
`;

interface RunView {
  conclusion: string | null;
  output: { title: string | null; summary: string | null };
  annotations: { path: string; start_line: number; start_column?: number | null; message: string }[];
}

async function settle(stack: SandboxStack): Promise<void> {
  await stack.hub.control.settled();
  await stack.steward.engine.idle();
  await stack.hub.control.settled();
}

function configRun(stack: SandboxStack, sha: string): RunView | undefined {
  return stack.hub.domains.checks.checkRuns({ owner: OWNER, repo: REPO, sha, name: CHECK })[0] as unknown as
    RunView | undefined;
}

function describeRun(run: RunView | undefined): string {
  if (!run) return "no check run";
  return `${run.conclusion}: ${run.output.title}`;
}

const scenario: Scenario = {
  name: "policy files are checked on pull requests (steward/config)",
  async run(stack, print) {
    const rows: Row[] = [];
    const pr = stack.hub.control.openPullRequest({
      owner: OWNER,
      repo: REPO,
      head: "policy-typo",
      title: "Deployment policy",
      files: { [FILE]: BROKEN },
    });
    print(`${OWNER}/${REPO}#${pr.number}: adds ${FILE} with a typo'd key and a bad glob`);
    await settle(stack);
    const failing = configRun(stack, pr.head_sha);
    rows.push({
      step: `PR #${pr.number} opened (${pr.head_sha.slice(0, 7)})`,
      event: "pull_request.opened",
      result: describeRun(failing),
    });
    for (const a of failing?.annotations ?? []) {
      rows.push({
        step: "  annotation",
        event: CHECK,
        result: `${a.path}:${a.start_line}:${a.start_column ?? 1} ${a.message}`,
      });
    }

    const fix = stack.hub.control.pushToPullRequest({
      owner: OWNER,
      repo: REPO,
      number: pr.number,
      files: { [FILE]: FIXED },
      message: "Fix the policy",
    });
    print(`pushed the fix (${fix.sha.slice(0, 7)})`);
    await settle(stack);
    const green = configRun(stack, fix.sha);
    rows.push({
      step: `PR #${pr.number} fixed (${fix.sha.slice(0, 7)})`,
      event: "pull_request.synchronize",
      result: describeRun(green),
    });
    const changes = (green?.output.summary ?? "").split("\n").filter((l) => l.startsWith("- `")).length;
    rows.push({
      step: "  summary",
      event: CHECK,
      result: `effective policy per section, ${changes} change(s) against main`,
    });

    const before = stack.hub.control.requests().length;
    const other = stack.hub.control.openPullRequest({
      owner: OWNER,
      repo: REPO,
      head: "readme",
      title: "Docs",
      files: { "README.md": "# web\n" },
    });
    await settle(stack);
    const writes = stack.hub.control
      .requests()
      .slice(before)
      .filter((r: { method: string; auth: string }) => r.method !== "GET" && r.auth === "installation").length;
    rows.push({
      step: `PR #${other.number} touches no policy file`,
      event: "pull_request.opened",
      result: `${describeRun(configRun(stack, other.head_sha))}, ${writes} API writes`,
    });
    return rows;
  },
};

export default scenario;
