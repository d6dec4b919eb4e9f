// Failed jobs noted from their workflow_job.completed deliveries (no read_ahead), against the
// sandbox hub: the run's decision starts their log reads beside its jobs list instead of after it,
// and still judges the jobs from its own list.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import rerun from "../../../handlers/rerun/index.js";
import { rerunPolicy, type RerunPolicy } from "../../../handlers/rerun/policy.js";
import { startHubClient, type HubClient } from "../../support/hub-client.js";
import { makeHarness, type Harness } from "./harness.js";
import { failedRuns, jobPayloads, TRANSIENT } from "./failed-run.js";

function policy(over: Partial<RerunPolicy> = {}): RerunPolicy {
  return { ...rerunPolicy.defaults, enabled: true, delay: "0s", rules: [{ jobs: ["integration-*"], log: ["ECONNRESET"] }], ...over };
}

let gh: HubClient;
let h: Harness;
const failedRun = failedRuns(() => gh);
const jobPayload = jobPayloads(() => gh);

beforeEach(async () => {
  gh = await startHubClient();
  h = makeHarness(gh);
});

afterEach(async () => {
  await gh.close();
});


const jobContext = (payload: Record<string, any>, p: RerunPolicy) => ({ ...h.handlerContext(payload, p), name: "workflow_job" });
const hubRequests = () => gh.hub.control.requests();
const logReads = () => hubRequests().filter((r) => r.path.endsWith("/logs"));
const storageReads = () => hubRequests().filter((r) => r.path.startsWith("/_sandbox/blobs/"));
const noteKeys = () => [...h.store.kv.keys()].filter((k) => k.startsWith("rerun:failed-job:"));
const reruns = () => gh.sent.filter((r) => r.method === "POST").map((r) => r.path.replace(/^.*\//, ""));

describe("rerun: failed jobs noted for the run's decision", () => {
  it("notes a failed job without reading anything; the decision reads its log first and the storage host while the jobs list is out, and re-runs", async () => {
    const run = await failedRun();
    const before = hubRequests().length;
    const noted = await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    expect(noted).toMatchObject({ status: "done", summary: expect.stringContaining("noted job integration-db") });
    expect(hubRequests()).toHaveLength(before);
    expect(noteKeys()).toHaveLength(1);

    // The jobs list is answered late: the log is read from the storage host meanwhile, not after it.
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs", { latencyMs: 1_500, times: 1 });
    const decided = await rerun.handle(h.handlerContext(await run.payload(), policy()));
    expect(decided).toMatchObject({ status: "done" });
    const list = hubRequests().find((r) => r.path.endsWith("/jobs"))!;
    const [log] = logReads();
    const [storage] = storageReads();
    // The log's API read went first and alone: answered before anything else about the run was asked.
    const about = hubRequests().filter((r) => r.auth === "installation" && r !== log);
    expect(about.every((r) => r.receivedAt >= log!.at)).toBe(true);
    expect(storage!.receivedAt).toBeLessThan(list.at);
    expect(logReads()).toHaveLength(1);
    expect(reruns()).toEqual(["rerun-failed-jobs"]);
    expect(h.reports[0]!.summary).toMatch(/integration-db \| failure \| yes \| matched rule 1 .*log matched ECONNRESET/);
  });

  it("a note keeps only the failed steps, however many steps the job had", async () => {
    const run = await failedRun();
    const payload = await jobPayload(run.id, "integration-db");
    const passed = Array.from({ length: 500 }, (_, i) => ({ name: `step ${i}`, status: "completed", conclusion: "success", number: i + 2 }));
    payload.workflow_job.steps = [...payload.workflow_job.steps, ...passed];
    expect(await rerun.handle(jobContext(payload, policy()))).toMatchObject({ status: "done" });
    const [note] = [...h.store.kv].filter(([k]) => k.startsWith("rerun:failed-job:")).map(([, v]) => v.value as { steps: { name: string }[] });
    expect(note!.steps.map((s) => s.name)).toEqual(["Install deps"]);
  });

  it("without a note the decision reads the log after the jobs list, as before", async () => {
    const run = await failedRun();
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs", { latencyMs: 300, times: 1 });
    expect(await rerun.handle(h.handlerContext(await run.payload(), policy()))).toMatchObject({ status: "done" });
    const list = hubRequests().find((r) => r.path.endsWith("/jobs"))!;
    expect(logReads()[0]!.receivedAt).toBeGreaterThanOrEqual(list.at);
    expect(reruns()).toEqual(["rerun-failed-jobs"]);
  });

  it("without a note a jobs list that fails fails the decision with nothing else asked", async () => {
    const run = await failedRun();
    const payload = await run.payload();
    // Every request the handler asks for, when it asks (not when the hub gets it).
    const asked: string[] = [];
    gh.octokit.hook.before("request", (o) => {
      const path = o.url.replace(/^https?:\/\/[^/]+/, "").split("?")[0]!;
      if (path.startsWith("/repos/")) asked.push(`${o.method} ${path}`);
    });
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs", { status: 502, times: 1 });
    await expect(rerun.handle(h.handlerContext(payload, policy()))).rejects.toMatchObject({ status: 502 });
    expect(asked).toEqual([`GET /repos/acme/web/actions/runs/${run.id}/attempts/1/jobs`]);
  });

  it("notes only failed jobs whose log a rule would read, and nothing where re-runs are off or no rule reads a log", async () => {
    const run = await failedRun();
    const cases: [string, RerunPolicy, RegExp][] = [
      ["lint", policy(), /job concluded "success"/],
      ["integration-db", policy({ rules: [{ jobs: ["integration-*"], steps: ["Install*"] }, { log: ["x"] }] }), /no rule reads this job's log/],
      ["integration-db", policy({ branches: ["release/*"] }), /branch "main" is not in rerun.branches/],
      ["integration-db", policy({ rules: [{ steps: ["Install*"] }] }), /no rule reads a log/],
      ["integration-db", { ...policy(), enabled: false }, /not enabled/],
    ];
    for (const [job, p, reason] of cases) {
      expect(await rerun.handle(jobContext(await jobPayload(run.id, job), p))).toMatchObject({ status: "skipped", reason: expect.stringMatching(reason) });
    }
    expect(noteKeys()).toEqual([]);
    expect(logReads()).toEqual([]);
  });

  it("reads not even the payload where re-runs are off or no rule reads a log", async () => {
    const run = await failedRun();
    for (const p of [{ ...policy(), enabled: false }, policy({ rules: [{ steps: ["Install*"] }] })]) {
      const ctx = jobContext(await jobPayload(run.id, "integration-db"), p);
      Object.defineProperty(ctx, "payload", { get: () => { throw new Error("payload read"); } });
      expect(await rerun.handle(ctx)).toMatchObject({ status: "skipped" });
    }
  });

  it("a note stands in for nothing the decision does not need: a policy changed in between reads no log", async () => {
    const run = await failedRun();
    await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    // The policy now re-runs the job on its step alone: no log is wanted, none is read early.
    const changed = policy({ rules: [{ jobs: ["integration-*"], steps: ["Install*"] }, { log: ["ECONNRESET"] }] });
    expect(await rerun.handle(h.handlerContext(await run.payload(), changed))).toMatchObject({ status: "done" });
    expect(logReads()).toEqual([]);
    expect(reruns()).toEqual(["rerun-failed-jobs"]);
  });

  it("reads nothing early when more jobs were noted than max_failed_jobs, and gives the run up", async () => {
    const run = await failedRun({ failures: { "integration-db": TRANSIENT, "integration-api": TRANSIENT, "integration-ui": TRANSIENT } });
    const p = policy({ max_failed_jobs: 2 });
    for (const job of ["integration-db", "integration-api", "integration-ui"]) await rerun.handle(jobContext(await jobPayload(run.id, job), p));
    expect(noteKeys()).toHaveLength(3);
    expect(await rerun.handle(h.handlerContext(await run.payload(), p))).toMatchObject({ status: "done", summary: expect.stringContaining("not re-run") });
    expect(logReads()).toEqual([]);
    expect(reruns()).toEqual([]);
  });

  it("a log the early read could not get is read again by the decision", async () => {
    const run = await failedRun();
    await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    // Not published yet when the early read asks: the decision asks again once the list is in.
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", { status: 404, message: "Not Found", times: 1 });
    expect(await rerun.handle(h.handlerContext(await run.payload(), policy()))).toMatchObject({ status: "done" });
    expect(logReads().map((r) => r.status)).toEqual([404, 302]);
    expect(reruns()).toEqual(["rerun-failed-jobs"]);
  });

  it("a note of one attempt is not taken for the next attempt's job", async () => {
    const run = await failedRun();
    await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    expect(await rerun.handle(h.handlerContext(await run.payload(), policy({ max_attempts: 3 })))).toMatchObject({ status: "done" });
    await run.finish();
    const reads = logReads().length;
    // Attempt 2 failed too; nothing was noted for it: its log is read after its jobs list.
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs", { latencyMs: 300, times: 1 });
    expect(await rerun.handle(h.handlerContext(await run.payload(2), policy({ max_attempts: 3 })))).toMatchObject({ status: "done" });
    const list = hubRequests().filter((r) => r.path.endsWith("/attempts/2/jobs"))[0]!;
    expect(logReads().slice(reads).every((r) => r.receivedAt >= list.at)).toBe(true);
    expect(logReads()).toHaveLength(reads + 1);
  });
});
