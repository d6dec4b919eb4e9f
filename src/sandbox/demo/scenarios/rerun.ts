// Re-runs of transient failures: acme/api's CI fails with a network reset while installing
// dependencies, and Steward re-runs the failed job; on the second attempt a test really fails,
// and Steward leaves it alone. The `steward/rerun` check run explains both decisions. Then three
// commits on main go green, red, green: the red one's job is a flake (rerun.flake_pattern), re-run
// alone. What Steward did is read as GitHub saw it (the re-run requests that reached the hub, the
// run's attempts, the check run's explanations), so the scenario plays into a sandbox running in
// another process as well as in this one.
import type { Row, Scenario } from "../types.js";
import { stackTarget, type DemoTarget } from "../target.js";

const OWNER = "acme";
const REPO = "api";
const POLICY_FILE = ".github/steward.yml";
const CHECK = "steward/rerun";

const RERUN_SECTION = `rerun:
  enabled: true
  max_attempts: 3
  delay: 0s
  flake_pattern: true
  rules:
    - jobs: ["integration-*"]
      log: ["ECONNRESET", "/lost communication with the server/i"]
    - runner_lost: true
`;

interface RunView {
  id: number;
  head_sha: string;
  run_attempt: number;
  status: string;
  conclusion: string | null;
}

interface CheckRunView {
  id: number;
  head_sha: string;
  conclusion: string | null;
  output: { title: string | null; summary: string | null };
}

interface RerunRequest {
  kind: string;
  detail: { run_id: number; attempt: number; allowed: boolean; job?: string };
}

/** One decision as the check run explains it: `### CI: run 7, attempt 1`, its action and reasons. */
interface Explanation {
  key: string;
  runId: number;
  attempt: number;
  action: string;
  reasons: string[];
}

/** Add the rerun section to the repository's policy, keeping other handlers' sections. */
async function pushPolicy(t: DemoTarget): Promise<string> {
  const current = (await t.control<string | null>("readFile", OWNER, REPO, POLICY_FILE)) ?? "";
  const files = /^rerun:/m.test(current)
    ? { "CHANGELOG.md": "demo\n" }
    : {
        [POLICY_FILE]:
          current && !current.endsWith("\n") ? `${current}\n${RERUN_SECTION}` : `${current}${RERUN_SECTION}`,
      };
  return (
    await t.control<{ sha: string }>("pushFiles", {
      owner: OWNER,
      repo: REPO,
      files,
      message: "Re-run transient CI failures",
    })
  ).sha;
}

async function settle(t: DemoTarget): Promise<void> {
  // A re-run starts a new attempt, whose completion is a new delivery: loop until quiet.
  for (let i = 0; i < 20; i++) {
    const before = (await t.control<unknown[]>("deliveries")).length;
    await t.settle();
    if ((await t.control<unknown[]>("deliveries")).length === before) return;
  }
}

const checkRuns = (t: DemoTarget, sha?: string) =>
  t.domain<CheckRunView[]>("checks", "checkRuns", { owner: OWNER, repo: REPO, name: CHECK, ...(sha ? { sha } : {}) });

/** Every decision the repository's steward/rerun check runs explain (the rendering of handlers/rerun/explain.ts). */
async function explanations(t: DemoTarget): Promise<Explanation[]> {
  const found: Explanation[] = [];
  for (const check of await checkRuns(t)) {
    for (const section of (check.output.summary ?? "").split(/^### /m).slice(1)) {
      const head = /run (\d+)\]?(?:\([^)]*\))?, attempt (\d+)/.exec(section.split("\n")[0] ?? "");
      const action = /^\*\*Action:\*\* (.*)\.$/m.exec(section);
      if (!head || !action) continue;
      found.push({
        key: `${check.id}:${section}`,
        runId: Number(head[1]),
        attempt: Number(head[2]),
        action: action[1]!,
        reasons: [...section.matchAll(/^- (.*)$/gm)].map((m) => m[1]!),
      });
    }
  }
  return found;
}

function decisionText(e: Explanation): string {
  if (e.reasons[0]?.startsWith("flake pattern:")) return `${e.reasons[0]}: ${e.action}`;
  if (e.action === "not re-run") return `not re-run: ${e.reasons.join("; ")}`;
  return `run ${e.runId} attempt ${e.attempt}: ${e.action}`;
}

/**
 * What Steward decided on a run's attempt, from the check run's explanation and the re-run request
 * GitHub received; a run it had nothing to say about is described by how it concluded.
 */
async function decisionOn(t: DemoTarget, run: RunView, attempt: number): Promise<string> {
  const e = (await explanations(t)).find((x) => x.runId === run.id && x.attempt === attempt);
  if (e) return decisionText(e);
  const now = await t.domain<RunView>("actions", "describeRun", run.id, attempt);
  return `not re-run: run concluded "${now.conclusion ?? now.status}"`;
}

/** The mode of the re-run GitHub was asked for that made attempt `n` (`failed`, `job`, `all`). */
async function attemptOf(t: DemoTarget, runId: number, n: number): Promise<string> {
  const run = await t.domain<RunView>("actions", "describeRun", runId);
  if (run.run_attempt < n) return "not re-run";
  const attempt = await t.domain<RunView>("actions", "describeRun", runId, n);
  const request = (await t.domain<RerunRequest[]>("actions", "rerunRequests", runId)).find(
    (r) => r.detail.allowed && r.detail.attempt === n - 1,
  );
  const mode = request ? request.kind.replace(/^actions\.rerun-?/, "").replace(/-jobs$/, "") || "all" : "?";
  return `attempt ${n}: ${attempt.conclusion ?? attempt.status} (mode ${mode})`;
}

/** Green, red, green on main: the red commit's failing job is a flake. */
async function flakeSteps(t: DemoTarget, print: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  const jobs = [{ name: "unit" }, { name: "e2e" }];
  const runs: RunView[] = [];
  for (const [i, failing] of [false, true, false].entries()) {
    const seen = new Set((await explanations(t)).map((e) => e.key));
    const { sha } = await t.control<{ sha: string }>("pushFiles", {
      owner: OWNER,
      repo: REPO,
      files: { "src/app.txt": `change ${i}\n` },
    });
    const run = await t.domain<RunView>("actions", "startRun", {
      owner: OWNER,
      repo: REPO,
      workflow: "E2E",
      sha,
      jobs,
    });
    if (failing) await t.domain("actions", "scriptAttempt", run.id, 2, "success");
    await t.domain("actions", "completeJob", { runId: run.id, job: "unit" });
    if (failing)
      await t.domain("actions", "failJob", {
        runId: run.id,
        job: "e2e",
        log: "Error: element #checkout not visible after 5000ms",
      });
    else await t.domain("actions", "completeJob", { runId: run.id, job: "e2e" });
    await settle(t);
    runs.push(run);
    // What this commit's run made Steward decide: on this run, or (the flake) on the red commit before it.
    const fresh = (await explanations(t)).filter((e) => !seen.has(e.key));
    rows.push({
      step: `E2E on commit ${String.fromCharCode(65 + i)} (${sha.slice(0, 7)}): e2e ${failing ? "fails (no rule matches)" : "passes"}`,
      event: "workflow_run.completed",
      result: fresh.length ? fresh.map(decisionText).join("; ") : await decisionOn(t, run, 1),
    });
  }
  const red = runs[1]!;
  rows.push({ step: `E2E on commit B re-run`, event: "workflow_run.completed", result: await attemptOf(t, red.id, 2) });
  const check = (await checkRuns(t, red.head_sha))[0];
  rows.push({
    step: `check run ${CHECK} on commit B`,
    event: "check_run",
    result: check ? `${check.conclusion}: ${check.output.title}` : "missing",
  });
  print(
    `flake pattern on commit B: ${rows[rows.length - 1]!.result}; \`steward flakes --repo ${OWNER}/${REPO}\` lists it, as does ${t.stewardUrl}/console/flakes?repo=${OWNER}%2F${REPO}`,
  );
  return rows;
}

async function play(t: DemoTarget, print: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  const sha = await pushPolicy(t);
  print(`${OWNER}/${REPO}: rerun policy pushed (${sha.slice(0, 7)}); CI starts`);
  const run = await t.domain<RunView>("actions", "startRun", {
    owner: OWNER,
    repo: REPO,
    workflow: "CI",
    sha,
    jobs: [
      { name: "lint", steps: ["Set up job", "Lint", "Complete job"] },
      { name: "integration-db", steps: ["Set up job", "Install deps", "Test", "Complete job"] },
    ],
  });
  // What the second attempt will do: the network is fine now, but a test fails for real.
  await t.domain("actions", "scriptAttempt", run.id, 2, {
    "integration-db": {
      conclusion: "failure",
      step: "Test",
      log: "AssertionError: expected status 200, received 500",
    },
  });
  await t.domain("actions", "completeJob", { runId: run.id, job: "lint" });
  await t.domain("actions", "failJob", {
    runId: run.id,
    job: "integration-db",
    step: "Install deps",
    log: "npm ERR! code ECONNRESET\nnpm ERR! network read ECONNRESET",
  });
  rows.push({
    step: `CI run ${run.id} attempt 1: integration-db fails installing deps (ECONNRESET)`,
    event: "workflow_run.completed",
    result: "failure",
  });
  await settle(t);

  rows.push({ step: "Steward on attempt 1", event: "rerun", result: await decisionOn(t, run, 1) });
  const second = await attemptOf(t, run.id, 2);
  rows.push({
    step: second === "not re-run" ? "no second attempt" : `CI run ${run.id} attempt 2: integration-db fails a test`,
    event: "workflow_run.completed",
    result: second === "not re-run" ? "-" : second.replace(/^attempt 2: /, ""),
  });
  rows.push({ step: "Steward on attempt 2", event: "rerun", result: await decisionOn(t, run, 2) });

  const check = (await checkRuns(t, run.head_sha))[0];
  rows.push({
    step: `check run ${CHECK}`,
    event: "check_run",
    result: check ? `${check.conclusion}: ${check.output.title}` : "missing",
  });
  if (check?.output.summary) {
    print(`${CHECK} summary:`);
    for (const line of check.output.summary.split("\n")) if (line.trim()) print(`  ${line}`);
  }
  if (second === "not re-run" || !check) throw new Error("Steward did not re-run the transient failure and explain it");
  rows.push(...(await flakeSteps(t, print)));
  return rows;
}

const scenario: Scenario = {
  name: "transient CI failures are re-run, real ones are not",
  run: (stack, print) => play(stackTarget(stack), print),
  play,
};

export default scenario;
