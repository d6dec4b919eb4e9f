// A failed CI run on the sandbox hub for the rerun handler's tests: started, its jobs finished
// (the failures with the logs given), its deliveries' payloads at hand.
import type { HubClient } from "../../support/hub-client.js";

export const ORG = "acme";
export const REPO = "web";
export const TRANSIENT = "2024-01-01T00:00:00Z npm ERR! network read ECONNRESET\n";

export interface FailedRun {
  id: number;
  /** The hub's workflow_run.completed payload of attempt `n` (default the latest). */
  payload(n?: number): Promise<Record<string, any>>;
  /** Fail the latest attempt's unfinished jobs as `failures` says (others succeed). */
  finish(failures?: Record<string, string>): Promise<void>;
  /** Someone re-runs the failed jobs (a new attempt). */
  rerunByHand(): Promise<void>;
}

/**
 * A CI run on acme/web that failed: `lint` passes; the jobs in `failures` fail at their first
 * step with that log (default `integration-db` with a transient network error).
 */
export function failedRuns(hub: () => HubClient) {
  const actions = () => hub().hub.domains.actions;
  const attemptOf = (runId: number) => (actions().describeRun(runId) as { run_attempt: number }).run_attempt;
  return async function failedRun(
    o: {
      branch?: string;
      sha?: string;
      event?: string;
      pullRequests?: Record<string, unknown>[];
      headRepository?: string;
      failures?: Record<string, string>;
    } = {},
  ): Promise<FailedRun> {
    const failures = o.failures ?? { "integration-db": TRANSIENT };
    const { failures: _f, ...start } = o;
    const jobs = [
      { name: "lint", steps: ["Lint"] },
      ...Object.keys(failures).map((name) => ({ name, steps: ["Install deps"] })),
    ];
    const { id } = actions().startRun({ owner: ORG, repo: REPO, workflow: "CI", jobs, ...start });
    const run: FailedRun = {
      id,
      async payload(n) {
        const attempt = n ?? attemptOf(id);
        const of = (d: { event: string; action: string | null; payload: unknown }) => {
          const p = d.payload as { workflow_run: { id: number; run_attempt: number } };
          return (
            d.event === "workflow_run" &&
            d.action === "completed" &&
            p.workflow_run.id === id &&
            p.workflow_run.run_attempt === attempt
          );
        };
        const [delivery] = await hub().hub.control.waitForDeliveries(of);
        return structuredClone(delivery!.payload) as Record<string, any>;
      },
      async finish(fail = failures) {
        await actions().idle();
        const open = (actions().describeRun(id) as { jobs: { name: string; status: string }[] }).jobs.filter(
          (j) => j.status !== "completed",
        );
        for (const job of open) {
          if (fail[job.name] !== undefined)
            actions().failJob({ runId: id, job: job.name, step: "Install deps", log: fail[job.name] });
          else actions().completeJob({ runId: id, job: job.name });
        }
        await actions().idle();
      },
      async rerunByHand() {
        actions().rerun(id, "failed", "user:dev-dana");
        await actions().idle();
      },
    };
    await run.finish();
    return run;
  };
}
