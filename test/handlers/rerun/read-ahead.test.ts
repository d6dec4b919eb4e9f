// Logs read ahead when a failed job finishes (workflow_job.completed), against the sandbox hub:
// the run's decision then reads no log, but only logs scanned for its own patterns stand in, a
// read in flight is waited for rather than repeated, and jobs the decision would not read are
// left alone.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import rerun from "../../../handlers/rerun/index.js";
import { rerunPolicy, type RerunPolicy } from "../../../handlers/rerun/policy.js";
import { startHubClient, type HubClient } from "../../support/hub-client.js";
import { makeHarness, type Harness } from "./harness.js";
import { failedRuns, jobPayloads, TRANSIENT } from "./failed-run.js";

function policy(over: Partial<RerunPolicy> = {}): RerunPolicy {
  return { ...rerunPolicy.defaults, enabled: true, delay: "0s", read_ahead: true, rules: [{ jobs: ["integration-*"], log: ["ECONNRESET"] }], ...over };
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


function jobContext(payload: Record<string, any>, p: RerunPolicy) {
  return { ...h.handlerContext(payload, p), name: "workflow_job" };
}

const logReads = () => gh.sent.filter((r) => r.path.endsWith("/logs"));
const storageReads = () => gh.hub.control.requests().filter((r) => r.path.startsWith("/_sandbox/blobs/"));
const readAheadKeys = () => [...h.store.kv.keys()].filter((k) => k.startsWith("rerun:log:"));

describe("rerun: logs read ahead", () => {
  it("reads a failed job's log when the job finishes; the run's decision then reads no log and re-runs", async () => {
    const run = await failedRun();
    const out = await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("read the log of job integration-db") });
    expect(logReads()).toHaveLength(1);
    expect(storageReads()).toHaveLength(1);
    expect(readAheadKeys()).toHaveLength(1);

    const decided = await rerun.handle(h.handlerContext(await run.payload(), policy()));
    expect(decided).toMatchObject({ status: "done" });
    expect(logReads()).toHaveLength(1);
    expect(storageReads()).toHaveLength(1);
    expect(gh.sent.filter((r) => r.method === "POST").map((r) => r.path.replace(/^.*\//, ""))).toEqual(["rerun-failed-jobs"]);
    expect(h.reports[0]!.summary).toMatch(/integration-db \| failure \| yes \| matched rule 1 .*log matched ECONNRESET/);
    // The facts kept for simulating other policies carry the log's tail, as when the decision reads it.
    const facts = [...h.store.kv].find(([k]) => k.startsWith("facts:rerun:"))![1].value as { logs: [number, string][] };
    expect(facts.logs[0]![1]).toContain("ECONNRESET");
  });

  it("a log read ahead that does not match still decides: the run is given up without reading it again", async () => {
    const run = await failedRun({ failures: { "integration-db": "FATAL: assertion failed\n" } });
    await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    const decided = await rerun.handle(h.handlerContext(await run.payload(), policy()));
    expect(decided).toMatchObject({ status: "done", summary: expect.stringContaining("not re-run") });
    expect(logReads()).toHaveLength(1);
    expect(h.reports[0]!.summary).toContain("log matches none of [ECONNRESET]");
  });

  it("a log scanned for other patterns is read again by the decision (the policy changed in between)", async () => {
    const run = await failedRun({ failures: { "integration-db": "Error: ETIMEDOUT\n" } });
    await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    const changed = policy({ rules: [{ jobs: ["integration-*"], log: ["ETIMEDOUT"] }] });
    const decided = await rerun.handle(h.handlerContext(await run.payload(), changed));
    expect(decided).toMatchObject({ status: "done" });
    expect(logReads()).toHaveLength(2);
    expect(gh.sent.filter((r) => r.method === "POST").map((r) => r.path.replace(/^.*\//, ""))).toEqual(["rerun-failed-jobs"]);
  });

  it("the decision waits for a read still in flight instead of reading the log a second time", async () => {
    const run = await failedRun();
    // The storage host holds the log back until the decision has started and listed the jobs.
    gh.hub.control.setFault("/_sandbox/blobs/**", { latencyMs: 500, times: 1 });
    const ahead = rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    await expect.poll(() => logReads().length, { timeout: 10_000 }).toBe(1);
    const decided = await rerun.handle(h.handlerContext(await run.payload(), policy()));
    expect(await ahead).toMatchObject({ status: "done" });
    expect(decided).toMatchObject({ status: "done" });
    expect(logReads()).toHaveLength(1);
    expect(storageReads()).toHaveLength(1);
    expect(gh.sent.filter((r) => r.method === "POST")).toHaveLength(1);
  });

  it("leaves alone jobs the decision would not read (passing, decided without a log, out of the policy's branches) and all of them where re-runs are off", async () => {
    const run = await failedRun();
    const cases: [string, RerunPolicy, RegExp][] = [
      ["lint", policy(), /job concluded "success"/],
      ["integration-db", policy({ rules: [{ steps: ["Install*"] }] }), /no rule reads this job's log/],
      ["integration-db", policy({ branches: ["release/*"] }), /branch "main" is not in rerun.branches/],
      ["integration-db", policy({ workflows: ["Deploy"] }), /workflow "CI" is not in rerun.workflows/],
      ["integration-db", { ...policy(), enabled: false }, /not enabled/],
    ];
    for (const [job, p, reason] of cases) {
      expect(await rerun.handle(jobContext(await jobPayload(run.id, job), p))).toMatchObject({ status: "skipped", reason: expect.stringMatching(reason) });
    }
    expect(logReads()).toEqual([]);
    expect(readAheadKeys()).toEqual([]);
  });

  it("reads not even the payload where re-runs are off", async () => {
    const run = await failedRun();
    const ctx = jobContext(await jobPayload(run.id, "integration-db"), { ...policy(), enabled: false });
    Object.defineProperty(ctx, "payload", { get: () => { throw new Error("payload read"); } });
    expect(await rerun.handle(ctx)).toMatchObject({ status: "skipped", reason: expect.stringContaining("rerun.enabled is false") });
  });

  it("without read_ahead only notes the failed job (failed-jobs-noted.ts): no log is read when the job finishes", async () => {
    const run = await failedRun();
    expect(await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy({ read_ahead: false })))).toMatchObject({ status: "done", summary: expect.stringContaining("noted") });
    expect(logReads()).toEqual([]);
    expect(readAheadKeys()).toEqual([]);
  });

  it("reads nothing for a delivery whose job, run or repository ids are not whole numbers", async () => {
    const run = await failedRun();
    const good = await jobPayload(run.id, "integration-db");
    const bad = [
      { ...good, workflow_job: { ...good.workflow_job, id: "1:2" } },
      { ...good, workflow_job: { ...good.workflow_job, run_id: 1.5 } },
      { ...good, workflow_job: { ...good.workflow_job, run_attempt: -1 } },
      { ...good, repository: { ...good.repository, id: null } },
      { ...good, workflow_job: null },
    ];
    for (const payload of bad) {
      expect(await rerun.handle(jobContext(payload, policy()))).toMatchObject({ status: "skipped", reason: expect.stringContaining("names no job, run or repository") });
    }
    expect(logReads()).toEqual([]);
    expect(readAheadKeys()).toEqual([]);
  });

  it("reads ahead at most max_failed_jobs logs of one run attempt, and a redelivery reads nothing", async () => {
    const run = await failedRun({ failures: { "integration-db": TRANSIENT, "integration-api": TRANSIENT, "integration-ui": TRANSIENT } });
    const p = policy({ max_failed_jobs: 2 });
    const outs = [];
    for (const job of ["integration-db", "integration-api", "integration-ui", "integration-db"]) outs.push(await rerun.handle(jobContext(await jobPayload(run.id, job), p)));
    expect(outs.map((o) => (o as { status: string }).status)).toEqual(["done", "done", "skipped", "skipped"]);
    expect(outs[2]).toMatchObject({ reason: expect.stringContaining("rerun.max_failed_jobs") });
    expect(outs[3]).toMatchObject({ reason: expect.stringContaining("already read ahead") });
    expect(logReads()).toHaveLength(2);
  });

  it("a log not published yet is left to the decision, which reads it then", async () => {
    const run = await failedRun();
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", { status: 404, message: "Not Found", times: 1 });
    const out = await rerun.handle(jobContext(await jobPayload(run.id, "integration-db"), policy()));
    expect(out).toMatchObject({ status: "skipped", reason: expect.stringContaining("not available yet") });
    expect(readAheadKeys()).toEqual([]);
    const decided = await rerun.handle(h.handlerContext(await run.payload(), policy()));
    expect(decided).toMatchObject({ status: "done" });
    expect(logReads().map((r) => r.status)).toEqual([404, 302]);
    expect(gh.sent.filter((r) => r.method === "POST")).toHaveLength(1);
  });
});
