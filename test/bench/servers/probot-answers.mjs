// The end-to-end peer: a Probot 14 app giving the same two answers as Steward's built-in handlers
// with the fewest requests a Probot app needs (no configuration read, no check run, no record):
// a failed run's jobs and their logs read and the failed jobs re-run when a log names ECONNRESET,
// and a deployment protection rule approved. Its Octokit is Probot's own (retry and throttling
// plugins); writes are not spaced a second apart, as the sandbox's Steward does not space them,
// so what separates the two is the work of answering, not GitHub's pacing.
import Bottleneck from "bottleneck";
import { Probot, ProbotOctokit, createNodeMiddleware } from "probot";
import { serveProbot } from "./serve.mjs";

/** @type {{ env: { GITHUB_API_URL: string; APP_ID: string; PRIVATE_KEY: string; WEBHOOK_SECRET: string } }} */
const hub = JSON.parse(process.env.BENCH_HUB ?? "");
const unpaced = new Bottleneck.Group();
const probot = new Probot({
  appId: hub.env.APP_ID,
  privateKey: hub.env.PRIVATE_KEY,
  secret: hub.env.WEBHOOK_SECRET,
  baseUrl: hub.env.GITHUB_API_URL,
  logLevel: "warn",
  // Probot gives every client its own rate-limit answers; the pacing groups are added to them.
  Octokit: ProbotOctokit.defaults((/** @type {{ throttle?: object }} */ options) => ({
    ...options,
    throttle: { ...options.throttle, write: unpaced, notifications: unpaced },
  })),
});

const middleware = await createNodeMiddleware(
  (app) => {
    app.on("workflow_run.completed", async (context) => {
      const run = context.payload.workflow_run;
      if (run.conclusion !== "failure") return;
      const { data } = await context.octokit.rest.actions.listJobsForWorkflowRun(
        context.repo({ run_id: run.id, filter: "latest" }),
      );
      for (const job of data.jobs.filter((j) => j.conclusion === "failure")) {
        const log = await context.octokit.rest.actions.downloadJobLogsForWorkflowRun(context.repo({ job_id: job.id }));
        if (String(log.data).includes("ECONNRESET")) {
          await context.octokit.rest.actions.reRunWorkflowFailedJobs(context.repo({ run_id: run.id }));
          return;
        }
      }
    });
    app.on("deployment_protection_rule", async (context) => {
      const url = context.payload.deployment_callback_url;
      if (!url) return;
      await context.octokit.request(`POST ${url}`, {
        environment_name: context.payload.environment,
        state: "approved",
        comment: "branch allowed",
      });
    });
  },
  { probot, webhooksPath: "/api/github/webhooks" },
);
serveProbot(
  middleware,
  async () => {},
  async () => {},
);
