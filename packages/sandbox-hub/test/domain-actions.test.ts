import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcome, startWorld, type World } from "./domain-helpers.js";

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

describe("hub actions domain over HTTP", () => {
  let w: World;
  const repo = { owner: "acme", repo: "web" };
  beforeAll(async () => {
    w = await startWorld();
  });
  afterAll(() => w.close());

  it("starts a run: requested then in_progress deliveries, and a run object with every field", async () => {
    const run = w.hub.domains.actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      branch: "main",
      event: "push",
      jobs: [{ name: "test", steps: ["Set up job", "npm test"] }],
    });
    await w.settle();
    const runEvents = w.deliveries("workflow_run").filter((d) => d.payload.workflow_run.id === run.id);
    expect(runEvents.map((d) => d.action)).toEqual(["requested", "in_progress"]);
    expect(runEvents.every((d) => d.signatureValid)).toBe(true);
    expect(runEvents[0]!.payload.installation.id).toBe(w.installationId);
    const jobEvents = w.deliveries("workflow_job").filter((d) => d.payload.workflow_job.run_id === run.id);
    expect(jobEvents.map((d) => d.action)).toEqual(["queued", "in_progress"]);

    const { data } = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...repo,
      run_id: run.id,
    });
    expect(data).toMatchObject({
      id: run.id,
      status: "in_progress",
      conclusion: null,
      run_attempt: 1,
      head_branch: "main",
      event: "push",
      name: "CI",
      path: ".github/workflows/ci.yml",
      previous_attempt_url: null,
    });
    expect(data.head_sha).toMatch(/^[0-9a-f]{40}$/);
    expect(data.created_at).toMatch(TIMESTAMP);
    expect(data.run_started_at).toMatch(TIMESTAMP);
    for (const key of [
      "actor",
      "triggering_actor",
      "pull_requests",
      "check_suite_id",
      "workflow_id",
      "html_url",
      "jobs_url",
      "logs_url",
      "rerun_url",
      "updated_at",
    ]) {
      expect(data, key).toHaveProperty(key);
      expect((data as Record<string, unknown>)[key], key).not.toBeUndefined();
    }
    // The head sha is the branch's real commit in the contents store.
    const branch = await w.octokit
      .request("GET /repos/{owner}/{repo}/branches/{branch}", { ...repo, branch: "main" })
      .catch(() => undefined);
    if (branch) expect(data.head_sha).toBe((branch.data as { commit: { sha: string } }).commit.sha);
  });

  it("starts a run of a fork's pull request: the fork is its head repository and no pull request is named, as on GitHub", async () => {
    const { actions } = w.hub.domains;
    const pr = w.hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "patch-fork",
      fromFork: true,
      files: { "src/fork.js": "export {};\n" },
    });
    const run = actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      headRepository: "contributor/web",
      branch: "patch-fork",
    });
    await w.settle();
    const { data } = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...repo,
      run_id: run.id,
    });
    expect(data).toMatchObject({
      event: "pull_request",
      head_branch: "patch-fork",
      head_sha: pr.head_sha,
      pull_requests: [],
    });
    expect(data.head_repository).toMatchObject({ full_name: "contributor/web", fork: true });
    expect(data.repository).toMatchObject({ full_name: "acme/web" });
    expect(data.head_repository.id).not.toBe(data.repository.id);
    expect(data.actor?.login).toBe("contributor");
    const requested = w.deliveries("workflow_run", "requested").find((d) => d.payload.workflow_run.id === run.id)!;
    expect(requested.payload.workflow_run.head_repository.full_name).toBe("contributor/web");
    expect(requested.payload.repository.full_name).toBe("acme/web");

    // Only a fork of the repository can be a run's head repository, and such a run names no pull request.
    expect(() => actions.startRun({ owner: "acme", repo: "web", workflow: "CI", headRepository: "acme/api" })).toThrow(
      /not a fork of acme\/web/,
    );
    expect(() =>
      actions.startRun({
        owner: "acme",
        repo: "web",
        workflow: "CI",
        headRepository: "contributor/web",
        branch: "patch-fork",
        pullRequests: [{ number: pr.number }],
      }),
    ).toThrow(/pull_requests/);
    actions.completeRun(run.id);
    await w.settle();
  });

  it("lists runs with filters and workflows by id or file name", async () => {
    const other = w.hub.domains.actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: ".github/workflows/deploy.yml",
      branch: "release",
      event: "workflow_dispatch",
    });
    const all = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs", repo);
    expect(all.data.total_count).toBeGreaterThanOrEqual(2);
    const byBranch = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs", { ...repo, branch: "release" });
    expect(byBranch.data.workflow_runs.map((r) => r.id)).toEqual([other.id]);
    const byEvent = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs", { ...repo, event: "push" });
    expect(byEvent.data.workflow_runs.every((r) => r.event === "push")).toBe(true);
    const wf = await w.octokit.request("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}", {
      ...repo,
      workflow_id: "deploy.yml",
    });
    expect(wf.data.path).toBe(".github/workflows/deploy.yml");
    const runsOfWf = await w.octokit.request("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", {
      ...repo,
      workflow_id: wf.data.id,
    });
    expect(runsOfWf.data.workflow_runs.map((r) => r.id)).toEqual([other.id]);
    w.hub.domains.actions.completeRun(other.id);
  });

  it("fails a job at a step with a log; the log download redirects to a URL that needs no credentials and expires", async () => {
    const run = w.hub.domains.actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      jobs: [{ name: "test", steps: ["Set up job", "npm ci", "npm test", "Post"] }],
    });
    w.hub.domains.actions.failJob({
      runId: run.id,
      job: "test",
      step: "npm test",
      log: "Error: expected 2 to be 3\n    at test.js:4",
    });
    await w.settle();
    const { data: got } = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...repo,
      run_id: run.id,
    });
    expect(got).toMatchObject({ status: "completed", conclusion: "failure" });
    const { data: jobs } = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", {
      ...repo,
      run_id: run.id,
    });
    const job = jobs.jobs[0]!;
    expect(job.steps!.map((s) => s.conclusion)).toEqual(["success", "success", "failure", "skipped"]);
    expect(
      w.deliveries("workflow_run", "completed").find((d) => d.payload.workflow_run.id === run.id)?.payload.workflow_run
        .conclusion,
    ).toBe("failure");

    const res = await fetch(`${w.hub.url}/repos/acme/web/actions/jobs/${job.id}/logs`, {
      headers: { Authorization: `token ${w.token}` },
      redirect: "manual",
    });
    expect(res.status).toBe(302);
    const location = res.headers.get("location")!;
    const log = await fetch(location);
    expect(log.status).toBe(200);
    expect(await log.text()).toContain("Error: expected 2 to be 3");
    w.hub.control.advanceClock(61_000);
    expect((await fetch(location)).status).toBeGreaterThanOrEqual(400);
    // Without credentials the API itself refuses (the redirect target is the only open door).
    expect(
      (await fetch(`${w.hub.url}/repos/acme/web/actions/jobs/${job.id}/logs`, { redirect: "manual" })).status,
    ).not.toBe(302);
  });

  it("refuses a re-run while the run is not completed (403) and records the request", async () => {
    const run = w.hub.domains.actions.startRun({ owner: "acme", repo: "web", workflow: "CI" });
    const r = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { ...repo, run_id: run.id }),
    );
    expect(r).toMatchObject({ status: 403, message: "This workflow is already running" });
    const f = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", {
        ...repo,
        run_id: run.id,
      }),
    );
    expect(f.status).toBe(403);
    const recorded = w.hub.domains.effects.of("actions").filter((e) => e.detail.run_id === run.id);
    expect(recorded.map((e) => [e.kind, e.detail.allowed])).toEqual([
      ["actions.rerun", false],
      ["actions.rerun-failed-jobs", false],
    ]);
    expect(recorded[0]!.by).toBe(`installation:${w.installationId}`);
    w.hub.domains.actions.completeRun(run.id);
  });

  it("re-runs failed jobs and their dependents, keeping successful jobs, as a new attempt with its own deliveries and suite", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      jobs: [
        { name: "build", steps: ["compile"] },
        { name: "lint", steps: ["eslint"] },
        { name: "test", steps: ["unit"], needs: ["build"] },
        { name: "deploy", steps: ["ship"], needs: ["test"] },
      ],
    });
    actions.completeJob({ runId: run.id, job: "build" });
    actions.completeJob({ runId: run.id, job: "lint" });
    actions.failJob({ runId: run.id, job: "test", log: "flaky network" });
    await w.settle();
    const first = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", {
      ...repo,
      run_id: run.id,
    });
    expect(Object.fromEntries(first.data.jobs.map((j) => [j.name, j.conclusion]))).toEqual({
      build: "success",
      lint: "success",
      test: "failure",
      deploy: "skipped",
    });
    const firstSuite = (
      await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...repo, run_id: run.id })
    ).data.check_suite_id;

    actions.scriptAttempt(run.id, 2, { test: "success", deploy: "success" });
    const res = await w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", {
      ...repo,
      run_id: run.id,
    });
    expect(res.status).toBe(201);
    await w.settle();

    const { data: after } = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...repo,
      run_id: run.id,
    });
    expect(after).toMatchObject({ run_attempt: 2, status: "completed", conclusion: "success" });
    expect(after.previous_attempt_url).toMatch(new RegExp(`/actions/runs/${run.id}/attempts/1$`));
    expect(after.check_suite_id).not.toBe(firstSuite);
    const attempt1 = await w.octokit.request(
      "GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}",
      { ...repo, run_id: run.id, attempt_number: 1 },
    );
    expect(attempt1.data).toMatchObject({ run_attempt: 1, conclusion: "failure" });

    const latest = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", {
      ...repo,
      run_id: run.id,
      filter: "latest",
    });
    const byName = Object.fromEntries(latest.data.jobs.map((j) => [j.name, j]));
    expect(byName.build!.run_attempt).toBe(1);
    expect(byName.lint!.run_attempt).toBe(1);
    expect(byName.test).toMatchObject({ run_attempt: 2, conclusion: "success" });
    expect(byName.deploy).toMatchObject({ run_attempt: 2, conclusion: "success" });
    const all = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", {
      ...repo,
      run_id: run.id,
      filter: "all",
    });
    expect(all.data.total_count).toBe(6);
    const a2jobs = await w.octokit.request(
      "GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs",
      { ...repo, run_id: run.id, attempt_number: 2 },
    );
    expect(a2jobs.data.total_count).toBe(4);

    const second = w
      .deliveries("workflow_run")
      .filter((d) => d.payload.workflow_run.id === run.id && d.payload.workflow_run.run_attempt === 2);
    expect(second.map((d) => d.action)).toEqual(["requested", "in_progress", "completed"]);
    expect(second[0]!.payload.workflow_run.status).toBe("queued");
    expect(
      w.deliveries("check_suite", "completed").some((d) => d.payload.check_suite.id === after.check_suite_id),
    ).toBe(true);
  });

  it("re-runs all jobs; without a script the new attempt stays in progress until the test completes it", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      jobs: [{ name: "a" }, { name: "b", needs: ["a"] }],
    });
    actions.completeJob({ runId: run.id, job: "a" });
    actions.completeJob({ runId: run.id, job: "b" });
    await w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { ...repo, run_id: run.id });
    await w.settle();
    let { data } = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...repo,
      run_id: run.id,
    });
    expect(data).toMatchObject({ run_attempt: 2, status: "in_progress", conclusion: null });
    const jobs = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", {
      ...repo,
      run_id: run.id,
    });
    expect(jobs.data.jobs.map((j) => [j.name, j.run_attempt, j.status])).toEqual([
      ["a", 2, "in_progress"],
      ["b", 2, "queued"],
    ]);
    actions.completeJob({ runId: run.id, job: "a" });
    actions.failJob({ runId: run.id, job: "b", conclusion: "timed_out" });
    ({ data } = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...repo,
      run_id: run.id,
    }));
    expect(data).toMatchObject({ status: "completed", conclusion: "timed_out" });
  });

  it("re-runs one job with its dependents (POST /actions/jobs/{job_id}/rerun)", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      jobs: [{ name: "a" }, { name: "b", needs: ["a"] }, { name: "c" }],
    });
    for (const job of ["a", "b", "c"]) actions.completeJob({ runId: run.id, job });
    const a = actions.jobsOf(run).find((j) => j.name === "a")!;
    const res = await w.octokit.request("POST /repos/{owner}/{repo}/actions/jobs/{job_id}/rerun", {
      ...repo,
      job_id: a.id,
    });
    expect(res.status).toBe(201);
    await w.settle();
    const jobs = (
      await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", { ...repo, run_id: run.id })
    ).data.jobs;
    expect(jobs.map((j) => [j.name, j.run_attempt])).toEqual([
      ["a", 2],
      ["b", 2],
      ["c", 1],
    ]);
    expect(actions.rerunRequests(run.id).map((r) => r.kind)).toEqual(["actions.rerun-job"]);
  });

  it("caps attempts at GitHub's 50 re-runs: the re-run making attempt 51 is made, one that would make attempt 52 is refused", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({ owner: "acme", repo: "web", workflow: "CI", jobs: [{ name: "only" }] });
    actions.failJob({ runId: run.id, job: "only" });
    for (let n = 2; n <= 50; n++) {
      actions.scriptAttempt(run.id, n, "failure");
      actions.rerun(run.id, "failed", "control");
      await w.settle();
    }
    actions.scriptAttempt(run.id, 51, "failure");
    const ok = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", {
        ...repo,
        run_id: run.id,
      }),
    );
    expect(ok.status).toBe(201);
    await w.settle();
    expect(
      (await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...repo, run_id: run.id })).data,
    ).toMatchObject({ run_attempt: 51, status: "completed" });
    const refused = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { ...repo, run_id: run.id }),
    );
    expect(refused).toMatchObject({ status: 403, message: "This workflow run cannot be retried" });
  });

  it("answers 404 for runs of another repository and unknown jobs", async () => {
    const run = w.hub.domains.actions.startRun({ owner: "acme", repo: "web", workflow: "CI" });
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
            owner: "acme",
            repo: "api",
            run_id: run.id,
          }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}", { ...repo, job_id: 999999999 }),
        )
      ).status,
    ).toBe(404);
    w.hub.domains.actions.completeRun(run.id);
  });

  it("is driven and inspected over the HTTP control surface too", async () => {
    const call = async (domain: string, fn: string, ...args: unknown[]) => {
      const res = await fetch(`${w.hub.url}/_sandbox/domains/${domain}/${fn}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ args }),
      });
      expect(res.status, `${domain}.${fn}`).toBe(200);
      return ((await res.json()) as { result: any }).result;
    };
    await call("deployments", "configureEnvironment", {
      owner: "acme",
      repo: "web",
      environment: "qa",
      reviewers: ["release-manager"],
    });
    const run = await call("actions", "startRun", {
      owner: "acme",
      repo: "web",
      workflow: "CI",
      jobs: [{ name: "deploy", environment: "qa" }],
    });
    expect((await call("actions", "describeRun", run.id)).status).toBe("waiting");
    expect((await call("deployments", "gatesOf", run.id))[0]).toMatchObject({ environment: "qa", outcome: "pending" });
    await call("actions", "completeRun", run.id);
    expect((await call("deployments", "gatesOf", run.id))[0]).toMatchObject({ outcome: "cancelled" });
    await w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { ...repo, run_id: run.id });
    const requests = await call("actions", "rerunRequests", run.id);
    expect(requests.map((r: { kind: string; detail: { allowed: boolean } }) => [r.kind, r.detail.allowed])).toEqual([
      ["actions.rerun", true],
    ]);
    const checkRuns = await call("checks", "checkRuns", {
      owner: "acme",
      repo: "web",
      sha: run.head_sha,
      name: "deploy",
    });
    expect(checkRuns.length).toBeGreaterThanOrEqual(1);
  });
});
