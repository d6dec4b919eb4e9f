// REST routes of check runs, check suites and annotations.
import type { Hub, HubRequest, Repo, Router } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { ChecksDomain, ListFilter } from "./domain.js";
import { actorOf } from "../core/shared.js";
import { bodyOf, created, intParam, invalidField, ok, queryInt } from "../core/http.js";

export function installChecksRoutes(hub: Hub, router: Router, checks: ChecksDomain): void {
  const base = "/repos/{owner}/{repo}";
  const read = { auth: "installation-or-user" as const, permission: { checks: "read" as const } };
  const write = { auth: "installation" as const, permission: { checks: "write" as const } };
  const repoOf = (req: HubRequest) => hub.requireRepo(req, req.params.owner!, req.params.repo!);
  /** Check runs belong to the app that created them: only an app can create or change its own. */
  const callerApp = (req: HubRequest): number => {
    const inst = hub.installationOf(req);
    if (!inst) throw new HubError(403, "Resource not accessible by integration");
    return inst.app_id;
  };
  const filterOf = (req: HubRequest): ListFilter => {
    const filter = req.query.get("filter") ?? "latest";
    if (filter !== "latest" && filter !== "all") throw invalidField("CheckRun", "filter", "invalid");
    const status = req.query.get("status");
    if (status !== null && !["queued", "in_progress", "completed"].includes(status))
      throw invalidField("CheckRun", "status", "invalid");
    return { check_name: req.query.get("check_name"), status, filter, app_id: queryInt(req, "app_id") };
  };
  /** Re-requesting a check run or suite: only the app that created it may. */
  const rerequest =
    <T extends { appId: number }>(
      what: string,
      idParam: string,
      find: (repo: Repo, id: number) => T,
      send: (repo: Repo, item: T, by: string) => void,
    ) =>
    (req: HubRequest) => {
      const repo = repoOf(req);
      const item = find(repo, intParam(req, idParam));
      if (item.appId !== callerApp(req))
        throw new HubError(403, `This ${what} can only be re-requested by the app that created it`);
      send(repo, item, actorOf(req.auth));
      return created({});
    };
  /** A ref may be a sha, a branch or a tag (document 001). */
  const shaOf = (repo: Repo, ref: string): string => hub.resolveRef?.(repo, ref) ?? ref;

  router.add(
    "POST",
    `${base}/check-runs`,
    (req) => {
      const repo = repoOf(req);
      const run = checks.createRun(repo, bodyOf(req), callerApp(req), { by: actorOf(req.auth) });
      return created(checks.runJson(repo, run));
    },
    write,
  );

  router.add(
    "GET",
    `${base}/check-runs/{check_run_id}`,
    (req) => {
      const repo = repoOf(req);
      return ok(checks.runJson(repo, checks.requireRun(repo, intParam(req, "check_run_id"))));
    },
    read,
  );

  router.add(
    "PATCH",
    `${base}/check-runs/{check_run_id}`,
    (req) => {
      const repo = repoOf(req);
      const run = checks.requireRun(repo, intParam(req, "check_run_id"));
      if (run.appId !== callerApp(req))
        throw new HubError(
          403,
          "Invalid app_id `" +
            String(run.appId) +
            "` - check run can only be modified by the GitHub App that created it.",
        );
      return ok(checks.runJson(repo, checks.updateRun(repo, run, bodyOf(req), actorOf(req.auth))));
    },
    write,
  );

  router.add(
    "GET",
    `${base}/check-runs/{check_run_id}/annotations`,
    (req) => {
      const repo = repoOf(req);
      const run = checks.requireRun(repo, intParam(req, "check_run_id"));
      return hub.paginate(req, run.annotations);
    },
    read,
  );

  router.add(
    "POST",
    `${base}/check-runs/{check_run_id}/rerequest`,
    rerequest(
      "check run",
      "check_run_id",
      (repo, id) => checks.requireRun(repo, id),
      (repo, run, by) => checks.rerequestRun(repo, run, by),
    ),
    write,
  );

  router.add(
    "GET",
    `${base}/commits/{ref}/check-runs`,
    (req) => {
      const repo = repoOf(req);
      const runs = checks.listForSha(repo, shaOf(repo, req.params.ref!), filterOf(req));
      return hub.paginate(
        req,
        runs.map((r) => checks.runJson(repo, r)),
        { wrap: "check_runs" },
      );
    },
    read,
  );

  router.add(
    "GET",
    `${base}/commits/{ref}/check-suites`,
    (req) => {
      const repo = repoOf(req);
      const appId = queryInt(req, "app_id");
      const name = req.query.get("check_name");
      const suites = checks
        .suitesForSha(repo, shaOf(repo, req.params.ref!))
        .filter((s) => !appId || s.appId === appId)
        .filter((s) => !name || checks.runsOfSuite(s.id).some((r) => r.name === name));
      return hub.paginate(
        req,
        suites.map((s) => checks.suiteJson(repo, s)),
        { wrap: "check_suites" },
      );
    },
    read,
  );

  router.add(
    "POST",
    `${base}/check-suites`,
    (req) => {
      const repo = repoOf(req);
      const sha = bodyOf(req).head_sha;
      if (typeof sha !== "string" || sha.length === 0) throw invalidField("CheckSuite", "head_sha", "missing_field");
      const appId = callerApp(req);
      const existing = checks.suitesForSha(repo, sha).find((s) => s.appId === appId && s.workflowRunId === null);
      const suite = existing ?? checks.suiteFor(repo, appId, sha);
      return { status: existing ? 200 : 201, body: checks.suiteJson(repo, suite) };
    },
    write,
  );

  router.add(
    "GET",
    `${base}/check-suites/{check_suite_id}`,
    (req) => {
      const repo = repoOf(req);
      return ok(checks.suiteJson(repo, checks.requireSuite(repo, intParam(req, "check_suite_id"))));
    },
    read,
  );

  router.add(
    "GET",
    `${base}/check-suites/{check_suite_id}/check-runs`,
    (req) => {
      const repo = repoOf(req);
      const suite = checks.requireSuite(repo, intParam(req, "check_suite_id"));
      const runs = checks.filterRuns(checks.runsOfSuite(suite.id), filterOf(req));
      return hub.paginate(
        req,
        runs.map((r) => checks.runJson(repo, r)),
        { wrap: "check_runs" },
      );
    },
    read,
  );

  router.add(
    "POST",
    `${base}/check-suites/{check_suite_id}/rerequest`,
    rerequest(
      "check suite",
      "check_suite_id",
      (repo, id) => checks.requireSuite(repo, id),
      (repo, suite, by) => checks.rerequestSuite(repo, suite, by),
    ),
    write,
  );
}
