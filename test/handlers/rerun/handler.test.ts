// The handler carrying out decisions against a local stand-in API: log redirect without
// credentials, idempotency, delay through the scheduler, 403 refusals, the check run's content.
import examples from "@octokit/webhooks-examples" with { type: "json" };
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import rerun from "../../../handlers/rerun/index.js";
import { rerunPolicy, type RerunPolicy } from "../../../handlers/rerun/policy.js";
import { makeHarness, startFakeApi, TOKEN, type FakeState, type Harness } from "./fake-api.js";

const SHA = "5779607b49aab1200488439f02372c57b4f75444";

function completedPayload(over: Record<string, unknown> = {}): Record<string, unknown> {
  const all = examples as unknown as { name: string; examples: Record<string, any>[] }[];
  const example = all.find((e) => e.name === "workflow_run")!.examples.find((e) => e.action === "completed")!;
  const payload = structuredClone(example);
  Object.assign(payload.workflow_run, {
    status: "completed",
    conclusion: "failure",
    event: "push",
    head_branch: "main",
    head_sha: SHA,
    name: "CI",
    path: ".github/workflows/ci.yml",
    run_attempt: 1,
    pull_requests: [],
    ...over,
  });
  return payload;
}

function policy(over: Partial<RerunPolicy> = {}): RerunPolicy {
  return { ...rerunPolicy.defaults, enabled: true, delay: "0s", ...over };
}

const step = (name: string, conclusion: string, number: number) => ({ name, conclusion, number, status: "completed" });

let state: FakeState;
let api: Awaited<ReturnType<typeof startFakeApi>>;
let h: Harness;

beforeEach(async () => {
  const payload = completedPayload();
  const runId = (payload.workflow_run as { id: number }).id;
  state = {
    run: { id: runId, run_attempt: 1, status: "completed", conclusion: "failure", head_sha: SHA },
    jobs: [
      { id: 11, name: "lint", conclusion: "success", steps: [step("Lint", "success", 1)] },
      { id: 12, name: "integration-db", conclusion: "failure", steps: [step("Install deps", "failure", 1)], log: "2024-01-01T00:00:00Z npm ERR! network read ECONNRESET\n" },
    ],
    pulls: {},
    branches: { main: SHA },
    rerunAnswers: [],
  };
  api = await startFakeApi(state);
  h = makeHarness(api.url);
});

afterEach(async () => {
  await api.close();
});

const logRule = { rules: [{ jobs: ["integration-*"], log: ["ECONNRESET"] }] };
const posts = () => api.requests.filter((r) => r.method === "POST").map((r) => r.path.replace(/^.*\/runs\/\d+\//, ""));

describe("rerun handler", () => {
  it("subscribes to completed workflow runs and owns the rerun section", () => {
    expect(rerun.events).toEqual(["workflow_run.completed", "merge_group.destroyed"]);
    expect(rerun.policy?.key).toBe("rerun");
  });

  it("re-runs failed jobs when the log shows a transient error, fetching the log without credentials", async () => {
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);

    const logFetch = api.requests.filter((r) => r.host === "logs");
    expect(logFetch).toHaveLength(1);
    expect(logFetch[0]!.authorization).toBeUndefined();
    for (const r of api.requests.filter((r) => r.host === "api")) expect(r.authorization).toBe(`token ${TOKEN}`);

    expect(h.reports).toHaveLength(1);
    const report = h.reports[0]!;
    expect(report).toMatchObject({ name: "steward/rerun", headSha: SHA, conclusion: "neutral" });
    expect(report.summary).toContain(`run ${state.run.id}`);
    expect(report.summary).toContain("attempt 1");
    expect(report.summary).toMatch(/integration-db \| failure \| yes \| matched rule 1 .*log matched ECONNRESET/);
    expect(report.summary).toContain("re-ran the failed jobs and their dependents (attempt 2 of 2)");
    expect(h.logLines.join("")).not.toContain(TOKEN);
  });

  it("treats an expired log as unavailable: the job is not transient", async () => {
    delete state.jobs[1]!.log;
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("not re-run") });
    expect(api.requests.filter((r) => r.host === "logs")).toHaveLength(1);
    expect(h.reports[0]!.summary).toContain("rule 1: log unavailable");
    expect(posts()).toEqual([]);
  });

  it("re-runs the whole workflow in workflow mode", async () => {
    await rerun.handle(h.handlerContext(completedPayload(), policy({ ...logRule, mode: "workflow" })));
    expect(posts()).toEqual(["rerun"]);
  });

  it("does not read logs when no rule needs them", async () => {
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy({ rules: [{ steps: ["Install*"] }] })));
    expect(out).toMatchObject({ status: "done" });
    expect(api.requests.some((r) => r.path.endsWith("/logs"))).toBe(false);
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("leaves a real failure alone and explains it", async () => {
    state.jobs[1]!.log = "AssertionError: expected 2 to equal 3\n";
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("not re-run") });
    expect(posts()).toEqual([]);
    expect(h.reports[0]!.title).toMatch(/Did not re-run CI attempt 1/);
    expect(h.reports[0]!.summary).toMatch(/integration-db \| failure \| no \| no rule matched \(rule 1: log matches none of \[ECONNRESET\]\)/);
  });

  it("is disabled by default and out-of-scope runs touch no API", async () => {
    const out = await rerun.handle(h.handlerContext(completedPayload(), { ...rerunPolicy.defaults }));
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining("not enabled") });
    const out2 = await rerun.handle(h.handlerContext(completedPayload({ head_branch: "feature/x" }), policy({ branches: ["main"] })));
    expect(out2).toEqual({ status: "skipped", reason: expect.stringContaining('branch "feature/x"') });
    expect(api.requests).toEqual([]);
    expect(h.reports).toEqual([]);
  });

  it("skips a superseded branch run without writing", async () => {
    state.branches.main = "f".repeat(40);
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining("superseded: branch main is now at fffffff") });
    expect(posts()).toEqual([]);
    expect(h.reports).toEqual([]);
  });

  it("compares a pull request run with the pull request's head", async () => {
    state.pulls[7] = SHA;
    const payload = completedPayload({ event: "pull_request", head_branch: "feature", pull_requests: [{ number: 7, id: 1, url: "", head: { sha: SHA, ref: "feature", repo: {} }, base: { sha: SHA, ref: "main", repo: {} } }] });
    expect(await rerun.handle(h.handlerContext(payload, policy(logRule)))).toMatchObject({ status: "done" });
    expect(api.requests.some((r) => r.path.endsWith("/pulls/7"))).toBe(true);

    state.pulls[7] = "e".repeat(40);
    const again = completedPayload({ event: "pull_request", run_attempt: 2, head_branch: "feature", pull_requests: [{ number: 7 }] });
    expect(await rerun.handle(h.handlerContext(again, policy({ ...logRule, max_attempts: 3 })))).toEqual({
      status: "skipped",
      reason: expect.stringContaining("superseded: pull request #7"),
    });
  });

  it("leaves a fork pull request's run alone by default, reading and writing nothing", async () => {
    const fork = { event: "pull_request", head_branch: "main", pull_requests: [], head_repository: { id: 900, full_name: "contributor/web", owner: { login: "contributor" } } };
    expect(await rerun.handle(h.handlerContext(completedPayload(fork), policy(logRule)))).toEqual({
      status: "skipped",
      reason: "run of fork pull request from contributor/web; rerun.forks is false",
    });
    expect(api.requests).toEqual([]);
    expect(h.reports).toEqual([]);
  });

  it("with rerun.forks, finds a fork pull request by its head branch to tell whether the run is current", async () => {
    const fork = { event: "pull_request", head_branch: "patch-1", pull_requests: [], head_repository: { id: 900, full_name: "contributor/web", owner: { login: "contributor" } } };
    const forks = { ...logRule, forks: true };
    state.forkPulls = { 9: { head: "contributor:patch-1", sha: SHA } };
    expect(await rerun.handle(h.handlerContext(completedPayload(fork), policy(forks)))).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);

    state.forkPulls = { 9: { head: "contributor:patch-1", sha: "d".repeat(40) } };
    expect(await rerun.handle(h.handlerContext(completedPayload({ ...fork, run_attempt: 2 }), policy({ ...forks, max_attempts: 3 })))).toEqual({
      status: "skipped",
      reason: expect.stringContaining("superseded: pull request #9 is now at ddddddd"),
    });
    state.forkPulls = {};
    expect(await rerun.handle(h.handlerContext(completedPayload({ ...fork, run_attempt: 3 }), policy({ ...forks, max_attempts: 4 })))).toEqual({
      status: "skipped",
      reason: "superseded: an open pull request from contributor:patch-1 no longer exists",
    });
  });

  it("re-runs at most once per run attempt, across redeliveries and duplicate deliveries", async () => {
    const payload = completedPayload();
    const first = await rerun.handle(h.handlerContext(payload, policy(logRule), "d-1"));
    const redelivered = await rerun.handle(h.handlerContext(payload, policy(logRule), "d-1"));
    const duplicate = await rerun.handle(h.handlerContext(structuredClone(payload), policy(logRule), "d-2"));
    expect(first).toMatchObject({ status: "done" });
    expect(redelivered).toMatchObject({ status: "skipped", reason: expect.stringContaining("already decided") });
    expect(duplicate).toMatchObject({ status: "skipped" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("a delivery whose worker died mid-decision takes its claim back on retry; others still stand down", async () => {
    const payload = completedPayload();
    const key = `rerun:${(payload.repository as { id: number }).id}:${state.run.id}:1`;
    await h.store.claim(key, { value: { state: "deciding", deliveryId: "crashed" } });
    const other = await rerun.handle({ ...h.handlerContext(payload, policy(logRule), "someone-else"), attempt: 2 });
    expect(other).toMatchObject({ status: "skipped" });
    // A worker killed mid-handler recorded no outcome: the resumed run is attempt 1 again.
    const retried = await rerun.handle({ ...h.handlerContext(payload, policy(logRule), "crashed"), attempt: 1 });
    expect(retried).toMatchObject({ status: "done" });
    expect(await h.store.get(key)).toEqual({ state: "decided", deliveryId: "crashed", outcome: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("concurrent deliveries for one attempt re-run once", async () => {
    const payload = completedPayload();
    const outs = await Promise.all([1, 2, 3].map((i) => rerun.handle(h.handlerContext(payload, policy(logRule), `c-${i}`))));
    expect(outs.filter((o) => o?.status === "done")).toHaveLength(1);
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("gives up when attempts are exhausted, counting from run_attempt", async () => {
    state.run.run_attempt = 3;
    const out = await rerun.handle(h.handlerContext(completedPayload({ run_attempt: 3 }), policy({ ...logRule, max_attempts: 3 })));
    expect(out).toMatchObject({ status: "done" });
    expect(posts()).toEqual([]);
    expect(h.reports[0]!.summary).toContain("attempt 3 of 3: attempts exhausted");
    expect(api.requests.some((r) => r.path.includes("/attempts/3/jobs"))).toBe(true);
  });

  it("gives up on too many failed jobs without reading their logs", async () => {
    state.jobs.push({ id: 13, name: "integration-api", conclusion: "failure", steps: [], log: "ECONNRESET" });
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy({ ...logRule, max_failed_jobs: 1 })));
    expect(out).toMatchObject({ status: "done" });
    expect(api.requests.some((r) => r.host === "logs")).toBe(false);
    expect(h.reports[0]!.summary).toContain("2 jobs failed, more than rerun.max_failed_jobs (1)");
  });

  it("schedules a delayed re-run in the queue and re-checks when it runs", async () => {
    const before = Date.now();
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy({ ...logRule, delay: "30s" })));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("scheduled in 30s") });
    expect(posts()).toEqual([]);
    expect(h.scheduled).toHaveLength(1);
    const task = h.scheduled[0]!;
    expect(task.key).toBe(`rerun:${(completedPayload().repository as { id: number }).id}:${state.run.id}:1`);
    expect(task.runAt.getTime()).toBeGreaterThanOrEqual(before + 30_000);
    expect(task.installationId).toBe(1);

    const done = await rerun.onTask!(h.taskContext(task));
    expect(done).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(api.requests.some((r) => r.method === "GET" && r.path.endsWith(`/actions/runs/${state.run.id}`))).toBe(true);

    // Running the same task again (a retried task) does not re-run twice.
    expect(await rerun.onTask!(h.taskContext(task))).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("a delayed task finds the run superseded meanwhile and does nothing", async () => {
    await rerun.handle(h.handlerContext(completedPayload(), policy({ ...logRule, delay: "5m" })));
    state.branches.main = "c".repeat(40);
    const out = await rerun.onTask!(h.taskContext(h.scheduled[0]!));
    expect(out).toMatchObject({ status: "skipped", reason: expect.stringContaining("superseded") });
    expect(posts()).toEqual([]);
  });

  it("a delayed task finds the run re-run by hand and does nothing", async () => {
    await rerun.handle(h.handlerContext(completedPayload(), policy({ ...logRule, delay: "5m" })));
    state.run.run_attempt = 2;
    const out = await rerun.onTask!(h.taskContext(h.scheduled[0]!));
    expect(out).toMatchObject({ status: "skipped", reason: expect.stringContaining("re-run meanwhile (now attempt 2)") });
    expect(posts()).toEqual([]);
  });

  it("retries after the delay when the API says the run is already running", async () => {
    state.rerunAnswers.push({ status: 403, message: "This workflow is already running" });
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("retrying in 30s") });
    expect(h.scheduled).toHaveLength(1);
    expect(h.scheduled[0]!.key).toMatch(/:busy:1$/);
    expect(h.reports).toEqual([]);

    const retried = await rerun.onTask!(h.taskContext(h.scheduled[0]!));
    expect(retried).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs", "rerun-failed-jobs"]);
    expect(h.reports).toHaveLength(1);
  });

  it("gives up on a run that stays busy, with the reason in the check run", async () => {
    for (let i = 0; i < 10; i++) state.rerunAnswers.push({ status: 403, message: "This workflow is already running" });
    await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    let out;
    while (h.scheduled.length > 0) out = await rerun.onTask!(h.taskContext(h.scheduled.shift()!));
    expect(posts()).toHaveLength(6);
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining('"This workflow is already running" after 6 tries') });
    expect(h.reports).toHaveLength(1);
    expect(h.reports[0]!.title).toMatch(/Could not re-run/);
  });

  it("late deliveries do not re-run an attempt that was already re-run", async () => {
    state.run.run_attempt = 2;
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining("re-run meanwhile (now attempt 2)") });
    expect(posts()).toEqual([]);
  });

  it("records a refusal it cannot retry as skipped, with the reason in the check run", async () => {
    state.rerunAnswers.push({ status: 403, message: "This workflow run cannot be retried" });
    const out = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule)));
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining("This workflow run cannot be retried") });
    expect(h.scheduled).toEqual([]);
    expect(h.reports[0]!.title).toMatch(/Could not re-run/);
    expect(h.reports[0]!.summary).toContain('the API refused ("This workflow run cannot be retried")');
    expect(await h.store.auditLog({ kind: "rerun_refused" })).toHaveLength(1);
  });

  it("a re-run whose answer was lost is not requested again: the retry sees the next attempt and explains", async () => {
    // The request took effect, but the client saw a server error (the answer was lost).
    state.rerunAnswers.push({ status: 502, message: "Bad Gateway", accepted: true });
    await expect(rerun.handle(h.handlerContext(completedPayload(), policy(logRule), "r-lost"))).rejects.toThrow();
    const retry = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule), "r-lost"));
    expect(retry).toMatchObject({ status: "done" });
    expect(state.run.run_attempt).toBe(2);
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(h.reports[0]!.title).not.toMatch(/Could not re-run/);
    expect(await h.store.auditLog({ kind: "rerun_refused" })).toHaveLength(0);
  });

  it("releases its claim when the API fails so a retry can decide", async () => {
    state.rerunAnswers.push({ status: 500, message: "boom" });
    await expect(rerun.handle(h.handlerContext(completedPayload(), policy(logRule), "r-1"))).rejects.toThrow();
    const retry = await rerun.handle(h.handlerContext(completedPayload(), policy(logRule), "r-1"));
    expect(retry).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs", "rerun-failed-jobs"]);
  });

  it("a check run on one commit explains every attempt", async () => {
    await rerun.handle(h.handlerContext(completedPayload(), policy({ ...logRule, max_attempts: 3 })));
    state.jobs[1]!.log = "Error: snapshot mismatch";
    await rerun.handle(h.handlerContext(completedPayload({ run_attempt: 2 }), policy({ ...logRule, max_attempts: 3 })));
    expect(h.reports).toHaveLength(2);
    const summary = h.reports[1]!.summary;
    expect(summary.indexOf("attempt 2")).toBeLessThan(summary.indexOf("attempt 1\n"));
    expect(summary).toContain("re-ran the failed jobs");
    expect(summary).toContain("log matches none of [ECONNRESET]");
  });
});
