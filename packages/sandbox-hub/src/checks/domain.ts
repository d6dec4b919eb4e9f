// Check suites, check runs and annotations of the sandbox hub, with the API's rules
// (see checks-rules.ts) and the deliveries a change causes (check_run.*, check_suite.*).
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { EffectsLog } from "../core/effects.js";
import { checkRunBodyProblems, runsBeyondNameLimit, suiteOutcome, latestPerName } from "./rules.js";
import {
  ACTIONS_APP_ID,
  appJson,
  botSender,
  type DeliveryQueue,
  deliverRepoEvent,
  findRepo,
  repoApi,
  repoHtml,
} from "../core/shared.js";

export interface Annotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column: number | null;
  end_column: number | null;
  annotation_level: string;
  title: string | null;
  message: string;
  raw_details: string | null;
  blob_href: string;
}

export interface CheckSuite {
  id: number;
  node_id: string;
  repoId: number;
  appId: number;
  head_sha: string;
  head_branch: string | null;
  before: string | null;
  after: string | null;
  status: "queued" | "in_progress" | "completed";
  conclusion: string | null;
  created_at: string;
  updated_at: string;
  /** Set by the actions domain when the suite belongs to a workflow run attempt. */
  workflowRunId: number | null;
  rerequestable: boolean;
}

export interface CheckRun {
  id: number;
  node_id: string;
  repoId: number;
  suiteId: number;
  appId: number;
  name: string;
  head_sha: string;
  external_id: string | null;
  details_url: string | null;
  status: string;
  conclusion: string | null;
  started_at: string | null;
  completed_at: string | null;
  output: { title: string | null; summary: string | null; text: string | null };
  annotations: Annotation[];
  actions: { label: string; description: string; identifier: string }[];
  /** Deleted because the suite went over 1000 runs with this name. */
  deleted: boolean;
}

export interface ListFilter {
  check_name?: string | null;
  status?: string | null;
  filter?: "latest" | "all";
  app_id?: number | null;
}

export class ChecksDomain {
  readonly suites = new Map<number, CheckSuite>();
  readonly runs = new Map<number, CheckRun>();
  constructor(
    private readonly hub: Hub,
    private readonly effects: EffectsLog,
    private readonly deliveries: DeliveryQueue,
  ) {}

  // ---- control (by names, so the HTTP control surface can call it) ------------------------

  /** Check runs on a repository (optionally of one commit and name), as the API renders them. */
  checkRuns(o: { owner: string; repo: string; sha?: string; name?: string }): Record<string, unknown>[] {
    const repo = findRepo(this.hub, o.owner, o.repo);
    return [...this.runs.values()]
      .filter(
        (r) => r.repoId === repo.id && !r.deleted && (!o.sha || r.head_sha === o.sha) && (!o.name || r.name === o.name),
      )
      .map((r) => ({ ...this.runJson(repo, r), annotations: r.annotations }));
  }

  /** Ask the app for checks on a commit (as a push does): `check_suite.requested`. */
  requestChecks(o: { owner: string; repo: string; sha: string; branch?: string }): Record<string, unknown> {
    const repo = findRepo(this.hub, o.owner, o.repo);
    return this.suiteJson(repo, this.requestSuite(repo, { headSha: o.sha, headBranch: o.branch ?? null }));
  }

  // ---- suites -------------------------------------------------------------------------

  /** The app's suite for a commit, created when missing (the API creates suites with their first run). */
  suiteFor(repo: Repo, appId: number, headSha: string, headBranch: string | null = null): CheckSuite {
    for (const s of this.suites.values()) {
      if (s.repoId === repo.id && s.appId === appId && s.head_sha === headSha && s.workflowRunId === null) return s;
    }
    return this.createSuite(repo, { appId, headSha, headBranch });
  }

  createSuite(
    repo: Repo,
    o: { appId: number; headSha: string; headBranch: string | null; workflowRunId?: number; before?: string | null },
  ): CheckSuite {
    const id = this.hub.nextId();
    const now = this.hub.timestamp();
    const suite: CheckSuite = {
      id,
      node_id: this.hub.nodeId("CheckSuite", id),
      repoId: repo.id,
      appId: o.appId,
      head_sha: o.headSha,
      head_branch: o.headBranch,
      before: o.before ?? null,
      after: o.headSha,
      status: "queued",
      conclusion: null,
      created_at: now,
      updated_at: now,
      workflowRunId: o.workflowRunId ?? null,
      rerequestable: true,
    };
    this.suites.set(id, suite);
    return suite;
  }

  /**
   * A push or pull request asks the app for checks: creates the app's suite for the head commit and
   * sends `check_suite.requested` (the core calls this when contents change).
   */
  requestSuite(
    repo: Repo,
    o: {
      headSha: string;
      headBranch: string | null;
      before?: string | null;
      action?: "requested" | "rerequested";
      onlyIfNew?: boolean;
    },
  ): CheckSuite {
    const known = this.suitesForSha(repo, o.headSha).find(
      (s) => s.appId === this.hub.appId && s.workflowRunId === null,
    );
    if (known && o.onlyIfNew) return known;
    const suite = known ?? this.suiteFor(repo, this.hub.appId, o.headSha, o.headBranch);
    if (o.before !== undefined) suite.before = o.before;
    if (suite.head_branch === null) suite.head_branch = o.headBranch;
    this.sendSuite(repo, suite, o.action ?? "requested");
    return suite;
  }

  requireSuite(repo: Repo, id: number): CheckSuite {
    const s = this.suites.get(id);
    if (!s || s.repoId !== repo.id) throw new HubError(404, "Not Found");
    return s;
  }

  suitesForSha(repo: Repo, sha: string): CheckSuite[] {
    return [...this.suites.values()].filter((s) => s.repoId === repo.id && s.head_sha === sha);
  }

  runsOfSuite(suiteId: number): CheckRun[] {
    return [...this.runs.values()].filter((r) => r.suiteId === suiteId && !r.deleted);
  }

  // ---- runs ---------------------------------------------------------------------------

  /** Create a check run for `appId` (validated as the API does; throws HubError 422). */
  createRun(
    repo: Repo,
    body: Record<string, unknown>,
    appId: number,
    o: { suite?: CheckSuite; by?: string } = {},
  ): CheckRun {
    this.assertValid(body, "create");
    const headSha = body.head_sha as string;
    const suite = o.suite ?? this.suiteFor(repo, appId, headSha);
    const id = this.hub.nextId();
    const now = this.hub.timestamp();
    const status = body.conclusion ? "completed" : ((body.status as string | undefined) ?? "queued");
    const run: CheckRun = {
      id,
      node_id: this.hub.nodeId("CheckRun", id),
      repoId: repo.id,
      suiteId: suite.id,
      appId,
      name: body.name as string,
      head_sha: headSha,
      external_id: (body.external_id as string | undefined) ?? null,
      details_url: (body.details_url as string | undefined) ?? null,
      status,
      conclusion: status === "completed" ? ((body.conclusion as string | undefined) ?? null) : null,
      started_at: this.time(body.started_at) ?? now,
      completed_at: status === "completed" ? (this.time(body.completed_at) ?? now) : null,
      output: { title: null, summary: null, text: null },
      annotations: [],
      actions: [],
      deleted: false,
    };
    this.applyOutputAndActions(run, repo, body);
    this.runs.set(id, run);
    this.enforceNameLimit(suite);
    this.effects.record("checks.check_run.created", o.by ?? "control", {
      id,
      name: run.name,
      head_sha: headSha,
      status,
      conclusion: run.conclusion,
    });
    this.sendRun(repo, run, "created");
    if (run.status === "completed") this.sendRun(repo, run, "completed");
    this.refreshSuite(repo, suite);
    return run;
  }

  updateRun(repo: Repo, run: CheckRun, body: Record<string, unknown>, by = "control"): CheckRun {
    this.assertValid(body, "update");
    const wasCompleted = run.status === "completed";
    if (typeof body.name === "string") run.name = body.name;
    if (body.details_url !== undefined) run.details_url = (body.details_url as string | null) ?? null;
    if (body.external_id !== undefined) run.external_id = (body.external_id as string | null) ?? null;
    run.started_at = this.time(body.started_at) ?? run.started_at;
    if (body.conclusion) {
      run.status = "completed";
      run.conclusion = body.conclusion as string;
    } else if (typeof body.status === "string") {
      if (body.status === "completed" && !run.conclusion) {
        throw new HubError(422, "Validation Failed", [
          {
            resource: "CheckRun",
            field: "conclusion",
            code: "missing_field",
            message: "Conclusion is required when status is completed.",
          },
        ]);
      }
      run.status = body.status;
      if (body.status !== "completed") run.conclusion = null;
    }
    if (run.status === "completed")
      run.completed_at = this.time(body.completed_at) ?? run.completed_at ?? this.hub.timestamp();
    else run.completed_at = null;
    this.applyOutputAndActions(run, repo, body);
    this.effects.record("checks.check_run.updated", by, {
      id: run.id,
      name: run.name,
      status: run.status,
      conclusion: run.conclusion,
    });
    if (run.status === "completed" && !wasCompleted) this.sendRun(repo, run, "completed");
    const suite = this.suites.get(run.suiteId);
    if (suite) this.refreshSuite(repo, suite);
    return run;
  }

  requireRun(repo: Repo, id: number): CheckRun {
    const r = this.runs.get(id);
    if (!r || r.repoId !== repo.id || r.deleted) throw new HubError(404, "Not Found");
    return r;
  }

  rerequestRun(repo: Repo, run: CheckRun, by: string): void {
    this.effects.record("checks.check_run.rerequested", by, { id: run.id, name: run.name });
    this.sendRun(repo, run, "rerequested");
  }

  rerequestSuite(repo: Repo, suite: CheckSuite, by: string): void {
    this.effects.record("checks.check_suite.rerequested", by, { id: suite.id });
    this.sendSuite(repo, suite, "rerequested");
  }

  /** Runs on a commit, filtered as `GET /commits/{ref}/check-runs` does. */
  listForSha(repo: Repo, sha: string, f: ListFilter): CheckRun[] {
    const runs = [...this.runs.values()].filter((r) => r.repoId === repo.id && r.head_sha === sha && !r.deleted);
    return this.filterRuns(runs, f);
  }

  filterRuns(runs: CheckRun[], f: ListFilter): CheckRun[] {
    if (f.check_name) runs = runs.filter((r) => r.name === f.check_name);
    if (f.app_id) runs = runs.filter((r) => r.appId === f.app_id);
    if ((f.filter ?? "latest") === "latest") runs = latestPerName(runs);
    if (f.status) runs = runs.filter((r) => r.status === f.status);
    return runs.sort((a, b) => b.id - a.id);
  }

  annotationsOf(runId: number): Annotation[] {
    return this.runs.get(runId)?.annotations ?? [];
  }

  // ---- JSON ---------------------------------------------------------------------------

  runJson(repo: Repo, run: CheckRun): Record<string, unknown> {
    return {
      id: run.id,
      node_id: run.node_id,
      head_sha: run.head_sha,
      external_id: run.external_id ?? "",
      url: repoApi(this.hub, repo, `/check-runs/${run.id}`),
      html_url: repoHtml(this.hub, repo, `/runs/${run.id}`),
      details_url: run.details_url ?? repoHtml(this.hub, repo, `/runs/${run.id}`),
      status: run.status,
      conclusion: run.conclusion,
      started_at: run.started_at,
      completed_at: run.completed_at,
      output: {
        title: run.output.title,
        summary: run.output.summary,
        text: run.output.text,
        annotations_count: run.annotations.length,
        annotations_url: repoApi(this.hub, repo, `/check-runs/${run.id}/annotations`),
      },
      name: run.name,
      check_suite: { id: run.suiteId },
      app: appJson(this.hub, run.appId),
      pull_requests: [],
      deployment: null,
      actions: run.actions,
    };
  }

  suiteJson(repo: Repo, suite: CheckSuite): Record<string, unknown> {
    return {
      id: suite.id,
      node_id: suite.node_id,
      head_branch: suite.head_branch,
      head_sha: suite.head_sha,
      status: suite.status,
      conclusion: suite.conclusion,
      url: repoApi(this.hub, repo, `/check-suites/${suite.id}`),
      before: suite.before,
      after: suite.after,
      pull_requests: [],
      app: appJson(this.hub, suite.appId),
      repository: this.hub.repoJson(repo),
      created_at: suite.created_at,
      updated_at: suite.updated_at,
      head_commit: {
        id: suite.head_sha,
        tree_id: suite.head_sha,
        message: "",
        timestamp: suite.created_at,
        author: null,
        committer: null,
      },
      latest_check_runs_count: latestPerName(this.runsOfSuite(suite.id)).length,
      check_runs_url: repoApi(this.hub, repo, `/check-suites/${suite.id}/check-runs`),
      rerequestable: suite.rerequestable,
      runs_rerequestable: suite.rerequestable,
    };
  }

  // ---- internals ----------------------------------------------------------------------

  /** A client-given ISO 8601 time in the API's `YYYY-MM-DDTHH:MM:SSZ` form (undefined when absent). */
  private time(value: unknown): string | undefined {
    return typeof value === "string" ? this.hub.timestamp(new Date(value)) : undefined;
  }

  private assertValid(body: Record<string, unknown>, mode: "create" | "update"): void {
    const problems = checkRunBodyProblems(body, mode);
    if (problems.length > 0) throw new HubError(422, "Validation Failed", problems);
  }

  private applyOutputAndActions(run: CheckRun, repo: Repo, body: Record<string, unknown>): void {
    const output = body.output as Record<string, unknown> | undefined | null;
    if (output) {
      run.output = {
        title: (output.title as string | undefined) ?? run.output.title,
        summary: (output.summary as string | undefined) ?? run.output.summary,
        text: output.text === undefined ? run.output.text : ((output.text as string | null) ?? null),
      };
      // Annotations accumulate across updates: that is how clients send more than 50.
      for (const a of (output.annotations as Record<string, unknown>[] | undefined) ?? []) {
        run.annotations.push({
          path: a.path as string,
          start_line: a.start_line as number,
          end_line: a.end_line as number,
          start_column: (a.start_column as number | undefined) ?? null,
          end_column: (a.end_column as number | undefined) ?? null,
          annotation_level: a.annotation_level as string,
          title: (a.title as string | undefined) ?? null,
          message: a.message as string,
          raw_details: (a.raw_details as string | undefined) ?? null,
          blob_href: repoHtml(this.hub, repo, `/blob/${run.head_sha}/${a.path as string}`),
        });
      }
    }
    if (Array.isArray(body.actions)) run.actions = body.actions as CheckRun["actions"];
  }

  private enforceNameLimit(suite: CheckSuite): void {
    for (const doomed of runsBeyondNameLimit(this.runsOfSuite(suite.id))) {
      doomed.deleted = true;
      this.runs.delete(doomed.id);
    }
  }

  /** Recompute a suite's status from its runs; announce it when it turns completed. */
  refreshSuite(repo: Repo, suite: CheckSuite): void {
    const before = suite.status;
    const outcome = suiteOutcome(this.runsOfSuite(suite.id));
    if (outcome.status === suite.status && outcome.conclusion === suite.conclusion) return;
    suite.status = outcome.status;
    suite.conclusion = outcome.conclusion;
    suite.updated_at = this.hub.timestamp();
    if (suite.status === "completed" && before !== "completed") this.sendSuite(repo, suite, "completed");
  }

  private sender(appId: number): Record<string, unknown> {
    return appId === ACTIONS_APP_ID
      ? botSender("github-actions", 41898282)
      : botSender(String(appJson(this.hub, appId).slug), 900000 + appId);
  }

  private sendRun(repo: Repo, run: CheckRun, action: string): void {
    const payload = {
      action,
      check_run: { ...this.runJson(repo, run), check_suite: this.suiteJson(repo, this.suites.get(run.suiteId)!) },
    };
    this.deliveries.push(() => deliverRepoEvent(this.hub, repo, "check_run", payload, this.sender(run.appId)));
  }

  private sendSuite(repo: Repo, suite: CheckSuite, action: string): void {
    const payload = { action, check_suite: this.suiteJson(repo, suite) };
    this.deliveries.push(() => deliverRepoEvent(this.hub, repo, "check_suite", payload, this.sender(suite.appId)));
  }
}
