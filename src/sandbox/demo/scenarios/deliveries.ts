// Deliveries flowing: a push, a pull request and a workflow run in the demo organisation,
// each delivered to Steward, with the status Steward answered.
import type { Row, Scenario } from "../types.js";
import { stackTarget, type DemoTarget } from "../target.js";

interface Delivery {
  event: string;
  action: string | null;
  status_code: number;
  status: string;
  payload: { ref?: string; after?: string };
}

async function play(t: DemoTarget, print: (line: string) => void): Promise<Row[]> {
  const start = (await t.control<Delivery[]>("deliveries")).length;
  print("pushing to acme/web, opening a pull request and running CI");
  const push = await t.control<{ sha: string }>("pushFiles", {
    owner: "acme",
    repo: "web",
    files: { "src/index.js": "export const hello = () => 'hello, world';\n" },
    message: "Say hello to the world",
  });
  const pr = await t.control<{ number: number }>("openPullRequest", {
    owner: "acme",
    repo: "web",
    head: `feature/greeting-${push.sha.slice(0, 7)}`,
    files: { "src/greeting.js": "export const greet = (n) => `hi ${n}`;\n" },
    title: "Add a greeting",
  });
  const run = await t.domain<{ id: number }>("actions", "startRun", {
    owner: "acme",
    repo: "web",
    workflow: "CI",
    sha: push.sha,
  });
  await t.domain("actions", "completeRun", run.id, "success");
  await t.settle();
  return (await t.control<Delivery[]>("deliveries")).slice(start).map((d) => ({
    step:
      d.event === "push"
        ? `push ${String(d.payload.ref).replace("refs/heads/", "")} ${String(d.payload.after).slice(0, 7)}`
        : d.event === "pull_request"
          ? `pull request #${pr.number}`
          : d.event === "workflow_run"
            ? `CI run ${run.id}`
            : d.event,
    event: d.action ? `${d.event}.${d.action}` : d.event,
    result: d.status_code ? `${d.status_code} ${d.status}` : d.status,
  }));
}

const scenario: Scenario = {
  name: "deliveries flow from the hub to Steward",
  run: (stack, print) => play(stackTarget(stack), print),
  play,
};

export default scenario;
