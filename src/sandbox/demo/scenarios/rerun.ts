// Re-runs of transient failures: acme/api's CI fails with a network reset while installing
// dependencies, and Steward re-runs the failed job; on the second attempt a test really fails,
// and Steward leaves it alone. The `steward/rerun` check run explains both decisions. Then three
// commits on main go green, red, green: the red one's job is a flake (rerun.flake_pattern), re-run
// alone and recorded for `steward flakes`.
import type { SandboxStack } from "../../stack.js";
import type { Row, Scenario } from "../types.js";
import { commandContext } from "../../../cli/context.js";

const OWNER = "acme";
const REPO = "api";
const POLICY_FILE = ".github/steward.yml";

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

/** Add the rerun section to the repository's policy, keeping other handlers' sections. */
function pushPolicy(stack: SandboxStack): string {
  const { control } = stack.hub;
  const current = control.readFile(OWNER, REPO, POLICY_FILE) ?? "";
  if (/^rerun:/m.test(current))
    return control.pushFiles({ owner: OWNER, repo: REPO, files: { "CHANGELOG.md": "demo\n" } }).sha;
  const text = current && !current.endsWith("\n") ? `${current}\n${RERUN_SECTION}` : `${current}${RERUN_SECTION}`;
  return control.pushFiles({
    owner: OWNER,
    repo: REPO,
    files: { [POLICY_FILE]: text },
    message: "Re-run transient CI failures",
  }).sha;
}

async function settle(stack: SandboxStack): Promise<void> {
  // A re-run starts a new attempt, whose completion is a new delivery: loop until quiet.
  for (let i = 0; i < 20; i++) {
    const before = stack.hub.control.deliveries().length;
    await stack.hub.domains.idle();
    await stack.hub.control.settled();
    await stack.steward.engine.idle();
    await stack.hub.domains.idle();
    await stack.hub.control.settled();
    if (stack.hub.control.deliveries().length === before) return;
  }
}

async function outcomeOf(stack: SandboxStack, runId: number, attempt: number): Promise<string> {
  const delivery = stack.hub.control
    .deliveries()
    .find(
      (d) =>
        d.event === "workflow_run" &&
        d.action === "completed" &&
        (d.payload.workflow_run as { id: number; run_attempt: number }).id === runId &&
        (d.payload.workflow_run as { run_attempt: number }).run_attempt === attempt,
    );
  if (!delivery) return "not delivered";
  const stored = await stack.steward.store.deliveries.getDelivery(delivery.guid);
  const outcome = stored?.outcomes.find((o) => o.handler === "rerun");
  return outcome ? `${outcome.status}: ${outcome.detail ?? ""}` : "no outcome";
}

/** Green, red, green on main: the red commit's failing job is a flake. */
async function flakeSteps(stack: SandboxStack, print: (line: string) => void): Promise<Row[]> {
  const { actions } = stack.hub.domains;
  const rows: Row[] = [];
  const jobs = [{ name: "unit" }, { name: "e2e" }];
  const runs = [];
  for (const [i, failing] of [false, true, false].entries()) {
    const sha = stack.hub.control.pushFiles({
      owner: OWNER,
      repo: REPO,
      files: { "src/app.txt": `change ${i}\n` },
    }).sha;
    const run = actions.startRun({ owner: OWNER, repo: REPO, workflow: "E2E", sha, jobs });
    if (failing) actions.scriptAttempt(run.id, 2, "success");
    actions.completeJob({ runId: run.id, job: "unit" });
    if (failing)
      actions.failJob({ runId: run.id, job: "e2e", log: "Error: element #checkout not visible after 5000ms" });
    else actions.completeJob({ runId: run.id, job: "e2e" });
    await settle(stack);
    runs.push(run);
    rows.push({
      step: `E2E on commit ${String.fromCharCode(65 + i)} (${sha.slice(0, 7)}): e2e ${failing ? "fails (no rule matches)" : "passes"}`,
      event: "workflow_run.completed",
      result: await outcomeOf(stack, run.id, 1),
    });
  }
  const red = runs[1]!;
  rows.push({
    step: `E2E on commit B re-run`,
    event: "workflow_run.completed",
    result: red.attempts[1] ? `attempt 2: ${red.attempts[1].conclusion} (mode ${red.attempts[1].mode})` : "not re-run",
  });
  rows.push({ step: `steward flakes --repo ${OWNER}/${REPO}`, event: "cli", result: await flakiest(stack) });
  print(
    `flake pattern: ${rows[rows.length - 1]!.result} (also listed at ${stack.steward.url}/console/flakes?repo=${OWNER}%2F${REPO})`,
  );
  return rows;
}

/** The top line of `steward flakes --repo acme/api`, run as a person would, against the stack's data directory. */
async function flakiest(stack: SandboxStack): Promise<string> {
  const command = stack.steward.handlers.flatMap((h) => h.commands ?? []).find((c) => c.name === "flakes");
  if (!command) return "none";
  let out = "";
  const ctx = commandContext("flakes", {
    env: { STEWARD_DATA_DIR: stack.config.dataDir },
    out: (t) => void (out += t),
    err: (t) => void (out += t),
  });
  if ((await command.run(["--repo", `${OWNER}/${REPO}`, "--since", "30d", "--limit", "5"], ctx)) !== 0)
    return out.trim();
  // FLAKES, RE-RUN, WORKFLOW / JOB, LAST SEEN, COMMIT, two spaces apart.
  const top = out.split("\n")[2]?.split(/ {2,}/);
  return top ? `${top[2]}: ${top[0]} flake, ${top[1]} re-run` : "none";
}

const scenario: Scenario = {
  name: "transient CI failures are re-run, real ones are not",
  async run(stack, print) {
    const { actions, checks } = stack.hub.domains;
    const rows: Row[] = [];
    const sha = pushPolicy(stack);
    print(`${OWNER}/${REPO}: rerun policy pushed (${sha.slice(0, 7)}); CI starts`);
    const run = actions.startRun({
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
    actions.scriptAttempt(run.id, 2, {
      "integration-db": {
        conclusion: "failure",
        step: "Test",
        log: "AssertionError: expected status 200, received 500",
      },
    });
    actions.completeJob({ runId: run.id, job: "lint" });
    actions.failJob({
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
    await settle(stack);

    rows.push({ step: "Steward on attempt 1", event: "rerun", result: await outcomeOf(stack, run.id, 1) });
    const second = run.attempts[1];
    rows.push({
      step: second ? `CI run ${run.id} attempt 2: integration-db fails a test` : "no second attempt",
      event: "workflow_run.completed",
      result: second ? `${second.conclusion ?? second.status} (mode ${second.mode})` : "-",
    });
    rows.push({ step: "Steward on attempt 2", event: "rerun", result: await outcomeOf(stack, run.id, 2) });

    const check = [...checks.runs.values()].find(
      (c) => c.name === "steward/rerun" && c.head_sha === run.head_sha && !c.deleted,
    );
    rows.push({
      step: "check run steward/rerun",
      event: "check_run",
      result: check ? `${check.conclusion}: ${check.output.title}` : "missing",
    });
    if (check?.output.summary) {
      print("steward/rerun summary:");
      for (const line of check.output.summary.split("\n")) if (line.trim()) print(`  ${line}`);
    }
    if (!second || !check) throw new Error("Steward did not re-run the transient failure and explain it");
    rows.push(...(await flakeSteps(stack, print)));
    return rows;
  },
};

export default scenario;
