// REST routes of workflows, runs, attempts, jobs, logs and re-runs.
import type { Hub, HubRequest, Router } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { ActionsDomain } from "./domain.js";
import { actorOf } from "../core/shared.js";
import { bodyOf, created, intParam, ok, queryInt } from "../core/http.js";

const LOG_URL_TTL_MS = 60_000;

export function installActionsRoutes(hub: Hub, router: Router, actions: ActionsDomain): void {
  const base = "/repos/{owner}/{repo}/actions";
  const read = { auth: "installation-or-user" as const, permission: { actions: "read" as const } };
  const write = { auth: "installation-or-user" as const, permission: { actions: "write" as const } };
  const repoOf = (req: HubRequest) => hub.requireRepo(req, req.params.owner!, req.params.repo!);
  const runOf = (req: HubRequest) => {
    const repo = repoOf(req);
    return { repo, run: actions.requireRun(intParam(req, "run_id"), repo) };
  };
  const runFilters = (req: HubRequest) => ({
    branch: req.query.get("branch"),
    event: req.query.get("event"),
    status: req.query.get("status"),
    actor: req.query.get("actor"),
    head_sha: req.query.get("head_sha"),
    check_suite_id: queryInt(req, "check_suite_id"),
  });

  router.add(
    "GET",
    `${base}/workflows`,
    (req) => {
      const repo = repoOf(req);
      return hub.paginate(
        req,
        actions.workflowsOf(repo).map((w) => actions.workflowJson(w)),
        { wrap: "workflows" },
      );
    },
    read,
  );

  router.add(
    "GET",
    `${base}/workflows/{workflow_id}`,
    (req) => {
      const repo = repoOf(req);
      return ok(actions.workflowJson(actions.requireWorkflow(repo, req.params.workflow_id!)));
    },
    read,
  );

  router.add(
    "GET",
    `${base}/workflows/{workflow_id}/runs`,
    (req) => {
      const repo = repoOf(req);
      const wf = actions.requireWorkflow(repo, req.params.workflow_id!);
      const runs = actions.listRuns(repo, { ...runFilters(req), workflowId: wf.id });
      return hub.paginate(
        req,
        runs.map((r) => actions.runJson(r)),
        { wrap: "workflow_runs" },
      );
    },
    read,
  );

  router.add(
    "GET",
    `${base}/runs`,
    (req) => {
      const repo = repoOf(req);
      return hub.paginate(
        req,
        actions.listRuns(repo, runFilters(req)).map((r) => actions.runJson(r)),
        { wrap: "workflow_runs" },
      );
    },
    read,
  );

  router.add(
    "GET",
    `${base}/runs/{run_id}`,
    (req) => {
      const { run } = runOf(req);
      return ok(actions.runJson(run));
    },
    read,
  );

  router.add(
    "GET",
    `${base}/runs/{run_id}/attempts/{attempt_number}`,
    (req) => {
      const { run } = runOf(req);
      return ok(actions.runJson(run, intParam(req, "attempt_number")));
    },
    read,
  );

  router.add(
    "GET",
    `${base}/runs/{run_id}/jobs`,
    (req) => {
      const { run } = runOf(req);
      const filter = req.query.get("filter") ?? "latest";
      if (filter !== "latest" && filter !== "all")
        throw new HubError(422, "Validation Failed", [{ resource: "WorkflowJob", field: "filter", code: "invalid" }]);
      const jobs = filter === "all" ? actions.allJobsOf(run) : actions.jobsOf(run);
      return hub.paginate(
        req,
        jobs.map((j) => actions.jobJson(j)),
        { wrap: "jobs" },
      );
    },
    read,
  );

  router.add(
    "GET",
    `${base}/runs/{run_id}/attempts/{attempt_number}/jobs`,
    (req) => {
      const { run } = runOf(req);
      const jobs = actions.jobsOf(run, intParam(req, "attempt_number"));
      return hub.paginate(
        req,
        jobs.map((j) => actions.jobJson(j)),
        { wrap: "jobs" },
      );
    },
    read,
  );

  router.add(
    "GET",
    `${base}/jobs/{job_id}`,
    (req) => {
      const repo = repoOf(req);
      return ok(actions.jobJson(actions.requireJob(intParam(req, "job_id"), repo)));
    },
    read,
  );

  // Log downloads answer a redirect to a short-lived URL that needs no Authorization (document 000).
  router.add(
    "GET",
    `${base}/jobs/{job_id}/logs`,
    (req) => {
      const repo = repoOf(req);
      const job = actions.requireJob(intParam(req, "job_id"), repo);
      return {
        status: 302,
        headers: { Location: hub.signedUrl(actions.logOf(job), LOG_URL_TTL_MS, "text/plain; charset=utf-8") },
      };
    },
    read,
  );

  router.add(
    "GET",
    `${base}/runs/{run_id}/logs`,
    (req) => {
      const { run } = runOf(req);
      const text = actions
        .jobsOf(run)
        .map((j) => `=== ${j.name} ===\n${actions.logOf(j)}`)
        .join("\n");
      return { status: 302, headers: { Location: hub.signedUrl(text, LOG_URL_TTL_MS, "text/plain; charset=utf-8") } };
    },
    read,
  );

  router.add(
    "POST",
    `${base}/runs/{run_id}/rerun`,
    (req) => {
      const { run } = runOf(req);
      actions.rerun(run.id, "all", actorOf(req.auth), { debug: bodyOf(req).enable_debug_logging === true });
      return created({});
    },
    write,
  );

  router.add(
    "POST",
    `${base}/runs/{run_id}/rerun-failed-jobs`,
    (req) => {
      const { run } = runOf(req);
      actions.rerun(run.id, "failed", actorOf(req.auth), { debug: bodyOf(req).enable_debug_logging === true });
      return created({});
    },
    write,
  );

  // Re-run one job (and the jobs that need it) as a new attempt of its run.
  router.add(
    "POST",
    `${base}/jobs/{job_id}/rerun`,
    (req) => {
      const repo = repoOf(req);
      const job = actions.requireJob(intParam(req, "job_id"), repo);
      actions.rerun(job.runId, "job", actorOf(req.auth), {
        debug: bodyOf(req).enable_debug_logging === true,
        job: job.name,
      });
      return created({});
    },
    write,
  );

  router.add(
    "POST",
    `${base}/runs/{run_id}/cancel`,
    (req) => {
      const { run } = runOf(req);
      actions.cancel(run.id, actorOf(req.auth));
      return { status: 202, body: {} };
    },
    write,
  );
}
