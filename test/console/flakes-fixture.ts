// Flakes made the way Steward finds them: a repository's policy turns on rerun.flake_pattern, and
// three commits of one branch run green, red, green in the sandbox hub; the rerun handler records
// the red commit's job as a flake (and re-runs it).
import type { SandboxStack } from "../../src/sandbox/stack.js";

const JOBS = [{ name: "unit" }, { name: "e2e" }];

export async function makeFlakes(
  stack: SandboxStack,
  settle: () => Promise<void>,
  owner: string,
  repo: string,
  o: { job?: string; times?: number } = {},
): Promise<{ redRunIds: number[]; redShas: string[] }> {
  const { control, domains } = stack.hub;
  const { actions } = domains;
  // A re-run makes new deliveries: settle until the hub has nothing more to send.
  const settled = async () => {
    for (let i = 0; i < 20; i++) {
      const before = control.deliveries().length;
      await settle();
      await domains.idle();
      if (control.deliveries().length === before) return;
    }
  };
  const flaky = o.job ?? "e2e";
  control.pushFiles({
    owner,
    repo,
    files: {
      ".github/steward.yml":
        "rerun:\n  enabled: true\n  flake_pattern: true\n  rules:\n    - log: [ECONNRESET]\n  events: [push]\n  workflows: [E2E]\n  max_attempts: 3\n",
    },
    message: "flake pattern on",
  });
  await settled();
  const redRunIds: number[] = [];
  const redShas: string[] = [];
  const commit = async (i: number, red: boolean) => {
    const sha = control.pushFiles({
      owner,
      repo,
      files: { "src/flaky.txt": `${i} ${Math.random()}\n` },
      message: `change ${i}`,
    }).sha;
    const run = actions.startRun({ owner, repo, workflow: "E2E", sha, jobs: JOBS });
    if (red) actions.scriptAttempt(run.id, 2, "success");
    for (const j of JOBS) {
      if (red && j.name === flaky)
        actions.failJob({ runId: run.id, job: j.name, log: "Error: element #checkout not visible after 5000ms" });
      else actions.completeJob({ runId: run.id, job: j.name });
    }
    await settled();
    if (red) {
      redRunIds.push(run.id);
      redShas.push(sha);
    }
  };
  // green, red, green, red, green, ...: each red commit sits between two green ones.
  const times = o.times ?? 1;
  await commit(0, false);
  for (let t = 0; t < times; t++) {
    await commit(2 * t + 1, true);
    await commit(2 * t + 2, false);
  }
  return { redRunIds, redShas };
}
