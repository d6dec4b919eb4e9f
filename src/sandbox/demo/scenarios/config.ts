// Policy checks on pull requests: a pull request adds a Steward policy with a typo'd key and a
// bad glob; `steward/config` fails with one annotation on each line. Fixing both in a second
// push turns the check green, and its summary shows what the policy changes.
import type { Row, Scenario } from "../types.js";
import { stackTarget, type DemoTarget } from "../target.js";

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

async function configRun(t: DemoTarget, sha: string): Promise<RunView | undefined> {
  return (await t.domain<RunView[]>("checks", "checkRuns", { owner: OWNER, repo: REPO, sha, name: CHECK }))[0];
}

function describeRun(run: RunView | undefined): string {
  if (!run) return "no check run";
  return `${run.conclusion}: ${run.output.title}`;
}

async function play(t: DemoTarget, print: (line: string) => void): Promise<Row[]> {
  // Branch names of their own, so the scenario plays again into a sandbox that already ran it.
  const tag = Date.now().toString(36);
  const rows: Row[] = [];
  const pr = await t.control<{ number: number; head_sha: string }>("openPullRequest", {
    owner: OWNER,
    repo: REPO,
    head: `policy-typo-${tag}`,
    title: "Deployment policy",
    files: { [FILE]: BROKEN },
  });
  print(`${OWNER}/${REPO}#${pr.number}: adds ${FILE} with a typo'd key and a bad glob`);
  await t.settle();
  const failing = await configRun(t, pr.head_sha);
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

  const fix = await t.control<{ sha: string }>("pushToPullRequest", {
    owner: OWNER,
    repo: REPO,
    number: pr.number,
    files: { [FILE]: FIXED },
    message: "Fix the policy",
  });
  print(`pushed the fix (${fix.sha.slice(0, 7)})`);
  await t.settle();
  const green = await configRun(t, fix.sha);
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

  const before = (await t.control<unknown[]>("requests")).length;
  const other = await t.control<{ number: number; head_sha: string }>("openPullRequest", {
    owner: OWNER,
    repo: REPO,
    head: `readme-${tag}`,
    title: "Docs",
    files: { "README.md": "# web\n" },
  });
  await t.settle();
  const writes = (await t.control<{ method: string; auth: string }[]>("requests"))
    .slice(before)
    .filter((r: { method: string; auth: string }) => r.method !== "GET" && r.auth === "installation").length;
  rows.push({
    step: `PR #${other.number} touches no policy file`,
    event: "pull_request.opened",
    result: `${describeRun(await configRun(t, other.head_sha))}, ${writes} API writes`,
  });
  return rows;
}

const scenario: Scenario = {
  name: "policy files are checked on pull requests (steward/config)",
  run: (stack, print) => play(stackTarget(stack), print),
  play,
};

export default scenario;
