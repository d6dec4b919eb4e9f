import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcome, startWorld, type World } from "./domain-helpers.js";

const DAY = 24 * 60 * 60 * 1000;

describe("hub environments, deployment reviews and protection rules over HTTP", () => {
  let w: World;
  const repo = { owner: "acme", repo: "web" };
  const deployJobs = [{ name: "build" }, { name: "deploy", needs: ["build"], environment: "production" }];

  beforeAll(async () => {
    w = await startWorld();
    const web = w.hub.control.repo("acme", "web")!;
    w.hub.domains.deployments.putEnvironment(web, "production", { reviewers: ["release-manager"] });
    w.hub.domains.deployments.putEnvironment(web, "staging", { protectionApps: [w.hub.hub.appId] });
  });
  afterAll(() => w.close());

  const runStatus = async (runId: number) =>
    (await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...repo, run_id: runId })).data;

  it("shows environments with their protection rules", async () => {
    const { data } = await w.octokit.request("GET /repos/{owner}/{repo}/environments/{environment_name}", {
      ...repo,
      environment_name: "production",
    });
    const rule = data.protection_rules!.find((r) => r.type === "required_reviewers") as {
      reviewers: { type: string; reviewer: { login: string } }[];
    };
    expect(rule.reviewers.map((r) => r.reviewer.login)).toEqual(["release-manager"]);
    const rules = await w.octokit.request(
      "GET /repos/{owner}/{repo}/environments/{environment_name}/deployment_protection_rules",
      { ...repo, environment_name: "staging" },
    );
    expect(rules.data.custom_deployment_protection_rules!.map((r) => r.app.id)).toEqual([w.hub.hub.appId]);
  });

  it("holds a job for a required reviewer: only that reviewer may approve, and approval lets the job proceed", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({ owner: "acme", repo: "web", workflow: "Deploy", jobs: deployJobs });
    actions.completeJob({ runId: run.id, job: "build" });
    await w.settle();
    expect(await runStatus(run.id)).toMatchObject({ status: "waiting" });
    expect(w.deliveries("workflow_job", "waiting").some((d) => d.payload.workflow_job.run_id === run.id)).toBe(true);
    const requested = w.deliveries("deployment_review", "requested").find((d) => d.payload.workflow_run.id === run.id);
    expect(requested?.payload.reviewers[0].reviewer.login).toBe("release-manager");

    const asApp = await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
      ...repo,
      run_id: run.id,
    });
    expect(asApp.data).toHaveLength(1);
    expect(asApp.data[0]).toMatchObject({
      environment: { name: "production" },
      current_user_can_approve: false,
      wait_timer: 0,
    });
    const envId = Number(asApp.data[0]!.environment.id);
    const reviewer = w.userOctokit("release-manager");
    const asReviewer = await reviewer.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
      ...repo,
      run_id: run.id,
    });
    expect(asReviewer.data[0]!.current_user_can_approve).toBe(true);
    const asOther = await w
      .userOctokit("dev-dana")
      .request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", { ...repo, run_id: run.id });
    expect(asOther.data[0]!.current_user_can_approve).toBe(false);

    const review = {
      ...repo,
      run_id: run.id,
      environment_ids: [envId],
      state: "approved" as const,
      comment: "ship it",
    };
    const byApp = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", review),
    );
    expect(byApp.status).toBe(403);
    const byDana = await outcome(
      w.userOctokit("dev-dana").request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", review),
    );
    expect(byDana.status).toBe(422);
    expect(JSON.stringify(byDana.data)).toContain("not a required reviewer");
    expect(await runStatus(run.id)).toMatchObject({ status: "waiting" });

    const approved = await reviewer.request(
      "POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments",
      review,
    );
    expect(approved.status).toBe(200);
    expect(approved.data[0]).toMatchObject({ environment: "production", sha: run.head_sha });
    expect(await runStatus(run.id)).toMatchObject({ status: "in_progress" });
    const again = await outcome(
      reviewer.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", review),
    );
    expect(again.status).toBe(422);

    actions.completeJob({ runId: run.id, job: "deploy" });
    await w.settle();
    expect(await runStatus(run.id)).toMatchObject({ status: "completed", conclusion: "success" });
    const decision = w.deliveries("deployment_review", "approved").find((d) => d.payload.workflow_run.id === run.id);
    expect(decision?.payload).toMatchObject({ approver: { login: "release-manager" }, comment: "ship it" });
    expect(decision?.signatureValid).toBe(true);

    const deployments = await w.octokit.request("GET /repos/{owner}/{repo}/deployments", {
      ...repo,
      sha: run.head_sha,
      environment: "production",
    });
    const mine = deployments.data.find((d) => d.sha === run.head_sha)!;
    const statuses = await w.octokit.request("GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses", {
      ...repo,
      deployment_id: Number(mine.id),
    });
    expect(statuses.data.map((s) => s.state)).toEqual(["success", "in_progress", "waiting"]);
    expect(w.hub.domains.deployments.reviews.filter((r) => r.runId === run.id)).toEqual([
      expect.objectContaining({ state: "approved", by: "release-manager", comment: "ship it" }),
    ]);
  });

  it("a rejection fails the job and the run, and dependents do not run", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "Deploy",
      jobs: [...deployJobs, { name: "smoke", needs: ["deploy"] }],
    });
    actions.completeJob({ runId: run.id, job: "build" });
    const [pending] = (
      await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
        ...repo,
        run_id: run.id,
      })
    ).data;
    await w
      .userOctokit("release-manager")
      .request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
        ...repo,
        run_id: run.id,
        environment_ids: [Number(pending!.environment.id)],
        state: "rejected",
        comment: "not today",
      });
    await w.settle();
    expect(await runStatus(run.id)).toMatchObject({ status: "completed", conclusion: "failure" });
    const jobs = (
      await w.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", { ...repo, run_id: run.id })
    ).data.jobs;
    expect(Object.fromEntries(jobs.map((j) => [j.name, j.conclusion]))).toEqual({
      build: "success",
      deploy: "failure",
      smoke: "skipped",
    });
    expect(w.deliveries("deployment_review", "rejected").some((d) => d.payload.comment === "not today")).toBe(true);
  });

  it("asks the protection-rule app and takes its decision on the callback URL with the installation token", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "Deploy",
      event: "push",
      jobs: [{ name: "deploy", environment: "staging" }],
    });
    await w.settle();
    const req = w
      .deliveries("deployment_protection_rule", "requested")
      .find((d) => d.payload.deployment_callback_url.includes(`/runs/${run.id}/`));
    expect(req?.payload).toMatchObject({
      environment: "staging",
      event: "push",
      sha: run.head_sha,
      ref: "main",
      installation: { id: w.installationId },
    });
    expect(req?.payload.deployment.environment).toBe("staging");
    const callback = req!.payload.deployment_callback_url as string;
    expect(callback).toBe(`${w.hub.url}/repos/acme/web/actions/runs/${run.id}/deployment_protection_rule`);

    const report = await w.octokit.request(`POST ${callback}`, {
      environment_name: "staging",
      comment: "checking the change calendar",
    });
    expect(report.status).toBe(204);
    expect(await runStatus(run.id)).toMatchObject({ status: "waiting" });
    expect(w.hub.domains.effects.of("deployments", "protection_rule.status_report").length).toBeGreaterThan(0);

    const byUser = await outcome(
      w.userOctokit("release-manager").request(`POST ${callback}`, { environment_name: "staging", state: "approved" }),
    );
    expect(byUser.status).toBeGreaterThanOrEqual(400);

    const ok = await w.octokit.request(`POST ${callback}`, {
      environment_name: "staging",
      state: "approved",
      comment: "inside the window",
    });
    expect(ok.status).toBe(204);
    expect(await runStatus(run.id)).toMatchObject({ status: "in_progress" });
    const second = await outcome(
      w.octokit.request(`POST ${callback}`, { environment_name: "staging", state: "rejected" }),
    );
    expect(second.status).toBe(422);
    actions.completeJob({ runId: run.id, job: "deploy" });
    expect(await runStatus(run.id)).toMatchObject({ conclusion: "success" });
  });

  it("rejects review bodies that break the rules (422)", async () => {
    const run = w.hub.domains.actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "Deploy",
      jobs: [{ name: "deploy", environment: "production" }],
    });
    const reviewer = w.userOctokit("release-manager");
    const bad = await outcome(
      reviewer.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
        ...repo,
        run_id: run.id,
        environment_ids: [1],
        state: "maybe" as never,
        comment: "",
      }),
    );
    expect(bad.status).toBe(422);
    const notWaiting = await outcome(
      reviewer.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
        ...repo,
        run_id: run.id,
        environment_ids: [123456789],
        state: "approved",
        comment: "",
      }),
    );
    expect(notWaiting.status).toBe(422);
  });

  // Last: it moves the sandbox clock 30 days, past every token issued so far.
  it("times a protection-rule request out after 30 days on the sandbox clock", async () => {
    const actions = w.hub.domains.actions;
    const run = actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "Deploy",
      jobs: [{ name: "deploy", environment: "staging" }],
    });
    w.hub.control.advanceClock(29 * DAY);
    let octokit = await w.freshOctokit();
    expect(
      (await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...repo, run_id: run.id })).data,
    ).toMatchObject({ status: "waiting" });
    w.hub.control.advanceClock(DAY + 1000);
    octokit = await w.freshOctokit();
    const pending = await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments", {
      ...repo,
      run_id: run.id,
    });
    expect(pending.data).toEqual([]);
    expect(
      (await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...repo, run_id: run.id })).data,
    ).toMatchObject({ status: "completed", conclusion: "failure" });
    const late = await outcome(
      octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule", {
        ...repo,
        run_id: run.id,
        environment_name: "staging",
        state: "approved",
      }),
    );
    expect(late.status).toBe(422);
  });
});
