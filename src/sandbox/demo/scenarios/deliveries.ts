// Deliveries flowing: a push, a pull request and a workflow run in the demo organisation,
// each delivered to Steward, with the status Steward answered.
import type { Scenario } from "../types.js";

const scenario: Scenario = {
  name: "deliveries flow from the hub to Steward",
  async run(stack, print) {
    const { control, domains } = stack.hub;
    const start = control.deliveries().length;
    print("pushing to acme/web, opening a pull request and running CI");
    const push = control.pushFiles({
      owner: "acme",
      repo: "web",
      files: { "src/index.js": "export const hello = () => 'hello, world';\n" },
      message: "Say hello to the world",
    });
    const pr = control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "feature/greeting",
      files: { "src/greeting.js": "export const greet = (n) => `hi ${n}`;\n" },
      title: "Add a greeting",
    });
    const run = domains.actions.startRun({ owner: "acme", repo: "web", workflow: "CI", sha: push.sha });
    domains.actions.completeRun(run.id, "success");
    await domains.idle();
    await control.settled();
    const rows = control
      .deliveries()
      .slice(start)
      .map((d) => ({
        step:
          d.event === "push"
            ? `push ${String((d.payload as { ref?: string }).ref).replace("refs/heads/", "")} ${String((d.payload as { after?: string }).after).slice(0, 7)}`
            : d.event === "pull_request"
              ? `pull request #${pr.number}`
              : d.event === "workflow_run"
                ? `CI run ${run.id}`
                : d.event,
        event: d.action ? `${d.event}.${d.action}` : d.event,
        result: d.status_code ? `${d.status_code} ${d.status}` : d.status,
      }));
    return rows;
  },
};

export default scenario;
