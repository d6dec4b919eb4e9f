import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcome, startWorld, type World } from "./domain-helpers.js";
import { tokenOctokit } from "./core-helpers.js";

describe("hub checks over HTTP", () => {
  let w: World;
  let sha: string;
  const repo = { owner: "acme", repo: "api" };
  const annotation = (i: number) => ({
    path: "src/a.ts",
    start_line: i + 1,
    end_line: i + 1,
    annotation_level: "warning" as const,
    message: `problem ${i}`,
  });

  beforeAll(async () => {
    w = await startWorld();
    sha = w.hub.control.pushFiles({
      owner: "acme",
      repo: "api",
      branch: "main",
      files: { "src/a.ts": "export {};\n" },
    }).sha;
  });
  afterAll(() => w.close());

  it("sends check_suite.requested for a push", async () => {
    await w.settle();
    const requested = w.deliveries("check_suite", "requested").find((d) => d.payload.check_suite.head_sha === sha);
    expect(requested?.payload.check_suite).toMatchObject({
      head_branch: "main",
      status: "queued",
      conclusion: null,
      app: { id: w.hub.hub.appId },
    });
    expect(requested?.signatureValid).toBe(true);
  });

  it("creates, updates and gets a check run, with check_run and check_suite deliveries", async () => {
    const created = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "steward/config",
      head_sha: sha,
      status: "in_progress",
      output: { title: "Checking", summary: "working" },
    });
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({
      name: "steward/config",
      status: "in_progress",
      conclusion: null,
      completed_at: null,
      head_sha: sha,
      app: { id: w.hub.hub.appId },
    });
    const updated = await w.octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...repo,
      check_run_id: created.data.id,
      conclusion: "success",
      output: { title: "All good", summary: "**fine**", text: "details" },
    });
    expect(updated.data).toMatchObject({
      status: "completed",
      conclusion: "success",
      output: { title: "All good", summary: "**fine**", text: "details", annotations_count: 0 },
    });
    expect(updated.data.completed_at).toMatch(/Z$/);
    const got = await w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...repo,
      check_run_id: created.data.id,
    });
    expect(got.data.conclusion).toBe("success");
    await w.settle();
    expect(w.deliveries("check_run", "created").some((d) => d.payload.check_run.id === created.data.id)).toBe(true);
    expect(w.deliveries("check_run", "completed").some((d) => d.payload.check_run.id === created.data.id)).toBe(true);
    const suiteDone = w
      .deliveries("check_suite", "completed")
      .find((d) => d.payload.check_suite.id === created.data.check_suite!.id);
    expect(suiteDone?.payload.check_suite.conclusion).toBe("success");
    const suite = await w.octokit.request("GET /repos/{owner}/{repo}/check-suites/{check_suite_id}", {
      ...repo,
      check_suite_id: created.data.check_suite!.id,
    });
    expect(suite.data).toMatchObject({ status: "completed", conclusion: "success", head_sha: sha });
  });

  it("lists runs for a ref (sha or branch) with latest/all, check_name and status", async () => {
    const first = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "lint",
      head_sha: sha,
      conclusion: "failure",
    });
    const second = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "lint",
      head_sha: sha,
      status: "queued",
    });
    const latest = await w.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
      ...repo,
      ref: sha,
      check_name: "lint",
    });
    expect(latest.data.check_runs.map((r) => r.id)).toEqual([second.data.id]);
    const all = await w.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
      ...repo,
      ref: "main",
      check_name: "lint",
      filter: "all",
    });
    expect(all.data.total_count).toBe(2);
    expect(all.data.check_runs.map((r) => r.id).sort()).toEqual([first.data.id, second.data.id].sort());
    const completed = await w.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
      ...repo,
      ref: sha,
      status: "completed",
      filter: "all",
    });
    expect(completed.data.check_runs.every((r) => r.status === "completed")).toBe(true);
    expect(completed.data.check_runs.some((r) => r.id === first.data.id)).toBe(true);
    const suites = await w.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-suites", {
      ...repo,
      ref: sha,
      app_id: w.hub.hub.appId,
    });
    expect(suites.data.total_count).toBe(1);
  });

  it("takes at most 50 annotations a request; more arrive over updates and list paginated", async () => {
    const tooMany = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
        ...repo,
        name: "big",
        head_sha: sha,
        output: { title: "t", summary: "s", annotations: Array.from({ length: 51 }, (_, i) => annotation(i)) },
      }),
    );
    expect(tooMany.status).toBe(422);
    expect(tooMany.message).toBe("Validation Failed");
    const run = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "big",
      head_sha: sha,
      output: { title: "t", summary: "s", annotations: Array.from({ length: 50 }, (_, i) => annotation(i)) },
    });
    await w.octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...repo,
      check_run_id: run.data.id,
      output: { title: "t", summary: "s", annotations: Array.from({ length: 20 }, (_, i) => annotation(50 + i)) },
    });
    const page1 = await w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", {
      ...repo,
      check_run_id: run.data.id,
    });
    expect(page1.data).toHaveLength(30);
    expect(page1.headers.link).toContain('rel="next"');
    const every = (await w.octokit.paginate("GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", {
      ...repo,
      check_run_id: Number(run.data.id),
      per_page: 100,
    })) as { message: string }[];
    expect(every).toHaveLength(70);
    expect(every[69]!.message).toBe("problem 69");
    const got = await w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...repo,
      check_run_id: run.data.id,
    });
    expect(got.data.output.annotations_count).toBe(70);
  });

  it("enforces output size limits and at most 3 actions", async () => {
    const long = "x".repeat(65_536);
    for (const output of [
      { title: "t", summary: long },
      { title: "t", summary: "s", text: long },
      { title: "t".repeat(256), summary: "s" },
      { title: "t" },
    ]) {
      const r = await outcome(
        w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
          ...repo,
          name: "limits",
          head_sha: sha,
          output,
        } as never),
      );
      expect(r.status, JSON.stringify(Object.keys(output))).toBe(422);
    }
    const fits = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "limits",
      head_sha: sha,
      output: { title: "t", summary: "x".repeat(65_535) },
    });
    expect(fits.status).toBe(201);
    const action = (i: number) => ({ label: `Fix ${i}`, description: "Apply the fix", identifier: `fix_${i}` });
    const four = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
        ...repo,
        name: "acts",
        head_sha: sha,
        actions: [0, 1, 2, 3].map(action),
      }),
    );
    expect(four.status).toBe(422);
    const three = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "acts",
      head_sha: sha,
      actions: [0, 1, 2].map(action),
    });
    expect((three.data as { actions?: unknown[] }).actions).toHaveLength(3);
    const timed = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "timed",
      head_sha: sha,
      started_at: "2024-05-01T10:00:00.123+02:00",
    });
    expect(timed.data.started_at).toBe("2024-05-01T08:00:00Z");
    expect(
      (
        await outcome(
          w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
            ...repo,
            name: "timed",
            head_sha: sha,
            started_at: "yesterday",
          }),
        )
      ).status,
    ).toBe(422);
    const noName = await outcome(
      w.octokit.request("POST /repos/{owner}/{repo}/check-runs", { ...repo, head_sha: sha } as never),
    );
    expect(noName.status).toBe(422);
  });

  it("keeps at most 1000 runs with the same name in a suite, deleting the oldest", async () => {
    const other = w.hub.control.pushFiles({
      owner: "acme",
      repo: "api",
      branch: "main",
      files: { "b.txt": "b\n" },
    }).sha;
    const api = w.hub.control.repo("acme", "api")!;
    const checks = w.hub.domains.checks;
    // A thousand deliveries would only slow the test down: pause the webhook while seeding.
    const url = w.hub.state.hook.url;
    w.hub.control.setWebhookUrl(undefined);
    const seeded = Array.from({ length: 999 }, () =>
      checks.createRun(api, { name: "flood", head_sha: other, conclusion: "neutral" }, w.hub.hub.appId),
    );
    await w.settle();
    w.hub.control.setWebhookUrl(url);
    const last = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "flood",
      head_sha: other,
      conclusion: "neutral",
    });
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
            ...repo,
            check_run_id: seeded[0]!.id,
          }),
        )
      ).status,
    ).toBe(200);
    await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "flood",
      head_sha: other,
      conclusion: "neutral",
    });
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
            ...repo,
            check_run_id: seeded[0]!.id,
          }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await outcome(
          w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
            ...repo,
            check_run_id: seeded[1]!.id,
          }),
        )
      ).status,
    ).toBe(200);
    const all = await w.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
      ...repo,
      ref: other,
      check_name: "flood",
      filter: "all",
      per_page: 1,
    });
    expect(all.data.total_count).toBe(1000);
    expect(all.data.check_runs[0]!.id).toBeGreaterThan(last.data.id);
  });

  it("re-requests a run of the app (check_run.rerequested) but not another app's run", async () => {
    const run = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "again",
      head_sha: sha,
      conclusion: "failure",
    });
    const r = await w.octokit.request("POST /repos/{owner}/{repo}/check-runs/{check_run_id}/rerequest", {
      ...repo,
      check_run_id: run.data.id,
    });
    expect(r.status).toBe(201);
    await w.settle();
    expect(w.deliveries("check_run", "rerequested").some((d) => d.payload.check_run.id === run.data.id)).toBe(true);

    const wf = w.hub.domains.actions.startRun({
      owner: "acme",
      repo: "api",
      workflow: "CI",
      sha,
      jobs: [{ name: "unit" }],
    });
    const jobId = w.hub.domains.actions.jobsOf(wf)[0]!.id;
    const actionsRun = await w.octokit.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...repo,
      check_run_id: jobId,
    });
    expect(actionsRun.data).toMatchObject({ name: "unit", status: "in_progress", app: { slug: "github-actions" } });
    const patch = await outcome(
      w.octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
        ...repo,
        check_run_id: jobId,
        conclusion: "success",
      }),
    );
    expect(patch.status).toBe(403);
  });

  it("another installed app creates check runs of any name as itself, which only it may change", async () => {
    const other = w.hub.control.installOtherApp("acme", { slug: "other-ci" });
    const otherOctokit = tokenOctokit(w.hub, other.token);
    const made = await otherOctokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: "unit",
      head_sha: sha,
      conclusion: "success",
    });
    expect(made.data).toMatchObject({
      name: "unit",
      conclusion: "success",
      app: { id: other.appId, slug: "other-ci" },
    });
    const listed = await w.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
      ...repo,
      ref: sha,
      check_name: "unit",
      filter: "all",
    });
    expect(listed.data.check_runs.map((r) => r.app?.slug).sort()).toEqual(["github-actions", "other-ci"]);
    // The hub's own app cannot change it, and the account's installation is still the hub's app's.
    expect(
      (
        await outcome(
          w.octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
            ...repo,
            check_run_id: made.data.id,
            conclusion: "failure",
          }),
        )
      ).status,
    ).toBe(403);
    expect(w.hub.control.installation("acme")!.id).toBe(w.installationId);
    // Without checks: write, nothing is created.
    const reader = tokenOctokit(
      w.hub,
      w.hub.control.installOtherApp("acme", { slug: "reader", permissions: { checks: "read" } }).token,
    );
    expect(
      (
        await outcome(
          reader.request("POST /repos/{owner}/{repo}/check-runs", {
            ...repo,
            name: "unit",
            head_sha: sha,
            conclusion: "success",
          }),
        )
      ).status,
    ).toBe(403);
  });
});
