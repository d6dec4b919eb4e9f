// The handler carrying out decisions against the sandbox hub: runs, jobs and logs are the hub's,
// re-runs take effect there (new attempts), logs come through its redirect without credentials;
// idempotency, delay through the scheduler, 403 refusals, the check run's content.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import rerun from "../../../handlers/rerun/index.js";
import { rerunPolicy, type RerunPolicy } from "../../../handlers/rerun/policy.js";
import { decisionKey } from "../../../handlers/rerun/keys.js";
import { startHubClient, type HubClient } from "../../support/hub-client.js";
import { makeHarness, type Harness } from "./harness.js";
import { failedRuns, ORG, REPO, TRANSIENT } from "./failed-run.js";

const RERUN = "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs";

function policy(over: Partial<RerunPolicy> = {}): RerunPolicy {
  return { ...rerunPolicy.defaults, enabled: true, delay: "0s", ...over };
}

let gh: HubClient;
let h: Harness;

beforeEach(async () => {
  gh = await startHubClient();
  h = makeHarness(gh);
});

afterEach(async () => {
  await gh.close();
});

const actions = () => gh.hub.domains.actions;
const logRule = { rules: [{ jobs: ["integration-*"], log: ["ECONNRESET"] }] };
/** Re-run requests the handler sent (whatever the answer), by their last path segment. */
const posts = () => gh.sent.filter((r) => r.method === "POST").map((r) => r.path.replace(/^.*\/runs\/\d+\//, ""));
const attemptOf = (runId: number) => (actions().describeRun(runId) as { run_attempt: number }).run_attempt;

const failedRun = failedRuns(() => gh);

describe("rerun handler", () => {
  it("subscribes to completed workflow runs and destroyed merge groups and owns the rerun section", () => {
    expect(rerun.events).toEqual(["workflow_run.completed", "merge_group.destroyed"]);
    expect(rerun.policy?.key).toBe("rerun");
  });

  it("re-runs failed jobs when the log shows a transient error, fetching the log without credentials", async () => {
    const run = await failedRun();
    const from = gh.hub.control.requests().length;
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(attemptOf(run.id)).toBe(2);

    const seen = gh.hub.control.requests().slice(from);
    const logFetch = seen.filter((r) => r.path.startsWith("/_sandbox/blobs/"));
    expect(logFetch).toHaveLength(1);
    expect(logFetch[0]!.authorization).toBe(false);
    // Every API call but the token's minting (app JWT) carried the installation token.
    for (const r of seen.filter((r) => !r.path.startsWith("/_sandbox/") && !r.path.endsWith("/access_tokens")))
      expect(r.auth).toBe("installation");

    expect(h.reports).toHaveLength(1);
    const report = h.reports[0]!;
    expect(report).toMatchObject({
      name: "steward/rerun",
      headSha: (await run.payload(1)).workflow_run.head_sha,
      conclusion: "neutral",
    });
    expect(report.summary).toContain(`run ${run.id}`);
    expect(report.summary).toContain("attempt 1");
    expect(report.summary).toMatch(/integration-db \| failure \| yes \| matched rule 1 .*log matched ECONNRESET/);
    expect(report.summary).toContain("re-ran the failed jobs and their dependents (attempt 2 of 2)");
    expect(h.logLines.join("")).not.toMatch(/gh[sp]_[A-Za-z0-9_]{16,}/);
  });

  it("reads the jobs, then the logs the rules need and the branch, and the run's attempt only to re-run", async () => {
    const run = await failedRun();
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done" });
    const reads = gh.sent
      .filter((r) => r.method === "GET" && r.path.startsWith("/repos/acme/web/"))
      .map((r) => r.path.replace(/^\/repos\/acme\/web\//, ""));
    expect(reads.map((p) => p.replace(/\d+/g, "N"))).toEqual([
      "actions/runs/N/attempts/N/jobs",
      "actions/jobs/N/logs",
      "branches/main",
      "actions/runs/N",
    ]);
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  }, 20_000);

  it("treats an expired log as unavailable: the job is not transient", async () => {
    const run = await failedRun();
    // GitHub deletes logs after their retention; the download then fails (here 410 Gone).
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", { status: 410, message: "Gone" });
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("not re-run") });
    expect(gh.sent.filter((r) => r.path.endsWith("/logs")).map((r) => r.status)).toEqual([410]);
    expect(h.reports[0]!.summary).toContain("rule 1: log unavailable");
    expect(posts()).toEqual([]);
    expect(attemptOf(run.id)).toBe(1);
  });

  it("re-runs the whole workflow in workflow mode", async () => {
    const run = await failedRun();
    await rerun.handle(h.handlerContext(await run.payload(), policy({ ...logRule, mode: "workflow" })));
    expect(posts()).toEqual(["rerun"]);
    expect(
      actions()
        .rerunRequests(run.id)
        .map((e) => [e.kind, e.detail.allowed]),
    ).toEqual([["actions.rerun", true]]);
  });

  it("does not read logs when no rule needs them", async () => {
    const run = await failedRun();
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy({ rules: [{ steps: ["Install*"] }] })));
    expect(out).toMatchObject({ status: "done" });
    expect(gh.sent.some((r) => r.path.endsWith("/logs"))).toBe(false);
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("leaves a real failure alone and explains it", async () => {
    const run = await failedRun({ failures: { "integration-db": "AssertionError: expected 2 to equal 3\n" } });
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("not re-run") });
    expect(posts()).toEqual([]);
    expect(h.reports[0]!.title).toMatch(/Did not re-run CI attempt 1/);
    expect(h.reports[0]!.summary).toMatch(
      /integration-db \| failure \| no \| no rule matched \(rule 1: log matches none of \[ECONNRESET\]\)/,
    );
  });

  it("is disabled by default and out-of-scope runs touch no API", async () => {
    const run = await failedRun();
    const out = await rerun.handle(h.handlerContext(await run.payload(), { ...rerunPolicy.defaults }));
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining("not enabled") });
    const sha = gh.hub.control.pushFiles({
      owner: ORG,
      repo: REPO,
      branch: "feature/x",
      files: { "x.txt": "x\n" },
    }).sha;
    const feature = await failedRun({ branch: "feature/x", sha });
    const out2 = await rerun.handle(h.handlerContext(await feature.payload(), policy({ branches: ["main"] })));
    expect(out2).toEqual({ status: "skipped", reason: expect.stringContaining('branch "feature/x"') });
    expect(gh.sent).toEqual([]);
    expect(h.reports).toEqual([]);
  });

  it("skips a superseded branch run without writing", async () => {
    const run = await failedRun();
    const { sha } = gh.hub.control.pushFiles({ owner: ORG, repo: REPO, files: { "later.txt": "later\n" } });
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toEqual({
      status: "skipped",
      reason: expect.stringContaining(`superseded: branch main is now at ${sha.slice(0, 7)}`),
    });
    expect(posts()).toEqual([]);
    expect(h.reports).toEqual([]);
  });

  it("compares a pull request run with the pull request's head", async () => {
    const pr = gh.hub.control.openPullRequest({ owner: ORG, repo: REPO, head: "feature", files: { "f.txt": "f\n" } });
    const run = await failedRun({
      branch: "feature",
      sha: pr.head_sha,
      event: "pull_request",
      pullRequests: [{ number: pr.number, head: { sha: pr.head_sha, ref: "feature" } }],
    });
    expect(await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)))).toMatchObject({
      status: "done",
    });
    expect(gh.sent.some((r) => r.path.endsWith(`/pulls/${pr.number}`))).toBe(true);

    // Attempt 2 fails too, but the pull request has moved on meanwhile.
    await run.finish();
    const { sha } = gh.hub.control.pushToPullRequest({
      owner: ORG,
      repo: REPO,
      number: pr.number,
      files: { "f.txt": "g\n" },
    });
    expect(await rerun.handle(h.handlerContext(await run.payload(2), policy({ ...logRule, max_attempts: 3 })))).toEqual(
      {
        status: "skipped",
        reason: expect.stringContaining(`superseded: pull request #${pr.number} is now at ${sha.slice(0, 7)}`),
      },
    );
  });

  it("leaves a fork pull request's run alone by default, reading and writing nothing", async () => {
    gh.hub.control.openPullRequest({
      owner: ORG,
      repo: REPO,
      head: "patch-1",
      fromFork: true,
      files: { "f.txt": "f\n" },
    });
    const run = await failedRun({ headRepository: "contributor/web", branch: "patch-1" });
    expect(await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)))).toEqual({
      status: "skipped",
      reason: "run of fork pull request from contributor/web; rerun.forks is false",
    });
    expect(gh.sent).toEqual([]);
    expect(h.reports).toEqual([]);
  });

  it("with rerun.forks, finds a fork pull request by its head branch to tell whether the run is current", async () => {
    const pr = gh.hub.control.openPullRequest({
      owner: ORG,
      repo: REPO,
      head: "patch-1",
      fromFork: true,
      files: { "f.txt": "f\n" },
    });
    const forks = { ...logRule, forks: true };
    const run = await failedRun({ headRepository: "contributor/web", branch: "patch-1" });
    expect(await rerun.handle(h.handlerContext(await run.payload(), policy(forks)))).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);

    await run.finish();
    const { sha } = gh.hub.control.pushToPullRequest({
      owner: ORG,
      repo: REPO,
      number: pr.number,
      files: { "f.txt": "g\n" },
    });
    expect(await rerun.handle(h.handlerContext(await run.payload(2), policy({ ...forks, max_attempts: 3 })))).toEqual({
      status: "skipped",
      reason: expect.stringContaining(`superseded: pull request #${pr.number} is now at ${sha.slice(0, 7)}`),
    });

    await run.rerunByHand();
    await run.finish();
    gh.hub.control.closePullRequest({ owner: ORG, repo: REPO, number: pr.number });
    expect(await rerun.handle(h.handlerContext(await run.payload(3), policy({ ...forks, max_attempts: 4 })))).toEqual({
      status: "skipped",
      reason: "superseded: an open pull request from contributor:patch-1 no longer exists",
    });
  });

  it("re-runs at most once per run attempt, across redeliveries and duplicate deliveries", async () => {
    const payload = await (await failedRun()).payload();
    const first = await rerun.handle(h.handlerContext(payload, policy(logRule), "d-1"));
    const redelivered = await rerun.handle(h.handlerContext(payload, policy(logRule), "d-1"));
    const duplicate = await rerun.handle(h.handlerContext(structuredClone(payload), policy(logRule), "d-2"));
    expect(first).toMatchObject({ status: "done" });
    expect(redelivered).toMatchObject({ status: "skipped", reason: expect.stringContaining("already decided") });
    expect(duplicate).toMatchObject({ status: "skipped" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("a delivery whose worker died mid-decision carries on with it on retry; others wait for it", async () => {
    const run = await failedRun();
    const payload = await run.payload();
    // What a worker killed while deciding leaves: the decision's lease, held by its delivery.
    const lease = `once:rerun:${decisionKey((payload.repository as { id: number }).id, run.id, 1)}:lease`;
    await h.store.claim(lease, { value: "delivery crashed" });
    await expect(
      rerun.handle({ ...h.handlerContext(payload, policy(logRule), "someone-else"), attempt: 2 }),
    ).rejects.toThrow(/is being carried out by delivery crashed/);
    // A worker killed mid-handler recorded no outcome: the resumed run is attempt 1 again.
    const retried = await rerun.handle({ ...h.handlerContext(payload, policy(logRule), "crashed"), attempt: 1 });
    expect(retried).toMatchObject({ status: "done" });
    const other = await rerun.handle({ ...h.handlerContext(payload, policy(logRule), "someone-else"), attempt: 3 });
    expect(other).toMatchObject({ status: "skipped", reason: expect.stringContaining("already decided") });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("concurrent deliveries for one attempt re-run once; the others are retried and stand down", async () => {
    const payload = await (await failedRun()).payload();
    const outs = await Promise.allSettled(
      [1, 2, 3].map((i) => rerun.handle(h.handlerContext(payload, policy(logRule), `c-${i}`))),
    );
    expect(outs.filter((o) => o.status === "fulfilled" && o.value?.status === "done")).toHaveLength(1);
    for (const o of outs) if (o.status === "rejected") expect(String(o.reason)).toMatch(/is being carried out/);
    const retried = await rerun.handle(h.handlerContext(payload, policy(logRule), "c-2"));
    expect(retried).toMatchObject({ status: "skipped", reason: expect.stringContaining("already decided") });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
  });

  it("gives up when attempts are exhausted, counting from run_attempt", async () => {
    const run = await failedRun();
    for (let i = 0; i < 2; i++) {
      await run.rerunByHand();
      await run.finish();
    }
    expect(attemptOf(run.id)).toBe(3);
    const out = await rerun.handle(h.handlerContext(await run.payload(3), policy({ ...logRule, max_attempts: 3 })));
    expect(out).toMatchObject({ status: "done" });
    expect(posts()).toEqual([]);
    expect(h.reports[0]!.summary).toContain("attempt 3 of 3: attempts exhausted");
    expect(gh.sent.some((r) => r.path.includes("/attempts/3/jobs"))).toBe(true);
  });

  it("gives up on too many failed jobs without reading their logs", async () => {
    const run = await failedRun({ failures: { "integration-db": TRANSIENT, "integration-api": "ECONNRESET" } });
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy({ ...logRule, max_failed_jobs: 1 })));
    expect(out).toMatchObject({ status: "done" });
    expect(gh.sent.some((r) => r.path.endsWith("/logs"))).toBe(false);
    expect(h.reports[0]!.summary).toContain("2 jobs failed, more than rerun.max_failed_jobs (1)");
  });

  it("without a delay, reads the run's attempt once, after the decision's facts, right before the re-run", async () => {
    const run = await failedRun();
    const from = gh.sent.length;
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done" });
    const sent = gh.sent.slice(from).map((r) => `${r.method} ${r.path.replace(/^\/repos\/[^/]+\/[^/]+/, "")}`);
    const runRead = `GET /actions/runs/${run.id}`;
    expect(sent.filter((r) => r === runRead)).toHaveLength(1);
    // Asked when carrying the decision out: after the facts, just before the request.
    expect(sent.indexOf(runRead)).toBeGreaterThan(sent.findIndex((r) => r.endsWith("/logs")));
    expect(sent.indexOf(runRead)).toBe(sent.length - 2);
    expect(sent.filter((r) => r.startsWith("POST"))).toEqual([`POST /actions/runs/${run.id}/rerun-failed-jobs`]);
  });

  it("a run read that fails stops a re-run before its request; the retry re-runs once", async () => {
    const run = await failedRun();
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      status: 404,
      message: "Not Found",
      times: 1,
    });
    await expect(rerun.handle(h.handlerContext(await run.payload(), policy(logRule), "r-read"))).rejects.toMatchObject({
      status: 404,
    });
    expect(posts()).toEqual([]);
    expect(await rerun.handle(h.handlerContext(await run.payload(), policy(logRule), "r-read"))).toMatchObject({
      status: "done",
    });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(attemptOf(run.id)).toBe(2);
  });

  it("a decision not to re-run does not read the run's attempt", async () => {
    const run = await failedRun({ failures: { "integration-db": TRANSIENT, "integration-api": "ECONNRESET" } });
    gh.hub.control.setFault("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      status: 404,
      message: "Not Found",
      times: 1,
    });
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy({ ...logRule, max_failed_jobs: 1 })));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("not re-run") });
    expect(posts()).toEqual([]);
    expect(gh.sent.some((r) => r.method === "GET" && r.path.endsWith(`/actions/runs/${run.id}`))).toBe(false);
  });

  it("the decision's facts and audit record are written before the re-run; a failure to write them fails the handler, whose retry re-runs once", async () => {
    const run = await failedRun();
    const audit = h.store.audit.bind(h.store);
    let refused = 0;
    h.store.audit = async (entry) => {
      if (entry.kind === "rerun_decision" && refused++ === 0) throw new Error("database is full");
      return audit(entry);
    };
    await expect(rerun.handle(h.handlerContext(await run.payload(), policy(logRule), "r-audit"))).rejects.toThrow(
      "database is full",
    );
    expect(posts()).toEqual([]);
    expect(await rerun.handle(h.handlerContext(await run.payload(1), policy(logRule), "r-audit"))).toMatchObject({
      status: "done",
    });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(attemptOf(run.id)).toBe(2);
    expect(
      (await h.store.auditLog({ kind: "rerun_decision" })).map((a) => (a.details as { decision: string }).decision),
    ).toEqual(["rerun"]);
    expect(await h.store.auditLog({ kind: "rerun_requested" })).toHaveLength(1);
    expect([...h.store.kv.keys()].filter((k) => k.startsWith("facts:rerun:"))).toHaveLength(2);
  });

  it("does not read the run when the re-run waits for a delay (it is read when the delay is over)", async () => {
    const run = await failedRun();
    const from = gh.sent.length;
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy({ ...logRule, delay: "30s" })));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("scheduled in 30s") });
    expect(posts()).toEqual([]);
    expect(gh.sent.slice(from).some((r) => r.method === "GET" && r.path.endsWith(`/actions/runs/${run.id}`))).toBe(
      false,
    );
  });

  it("schedules a delayed re-run in the queue and re-checks when it runs", async () => {
    const run = await failedRun();
    const payload = await run.payload();
    const before = Date.now();
    const out = await rerun.handle(h.handlerContext(payload, policy({ ...logRule, delay: "30s" })));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("scheduled in 30s") });
    expect(posts()).toEqual([]);
    expect(h.scheduled).toHaveLength(1);
    const task = h.scheduled[0]!;
    expect(task.key).toBe(`rerun:${(payload.repository as { id: number }).id}:${run.id}:1`);
    expect(task.runAt.getTime()).toBeGreaterThanOrEqual(before + 30_000);
    expect(task.installationId).toBe(gh.installationId);

    const done = await rerun.onTask!(h.taskContext(task));
    expect(done).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(gh.sent.some((r) => r.method === "GET" && r.path.endsWith(`/actions/runs/${run.id}`))).toBe(true);

    // Running the same task again (a retried task) does not re-run twice.
    expect(await rerun.onTask!(h.taskContext(task))).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(attemptOf(run.id)).toBe(2);
  });

  it("a delayed task finds the run superseded meanwhile and does nothing", async () => {
    const run = await failedRun();
    await rerun.handle(h.handlerContext(await run.payload(), policy({ ...logRule, delay: "5m" })));
    gh.hub.control.pushFiles({ owner: ORG, repo: REPO, files: { "later.txt": "later\n" } });
    const out = await rerun.onTask!(h.taskContext(h.scheduled[0]!));
    expect(out).toMatchObject({ status: "skipped", reason: expect.stringContaining("superseded") });
    expect(posts()).toEqual([]);
  });

  it("a delayed task finds the run re-run by hand and does nothing", async () => {
    const run = await failedRun();
    await rerun.handle(h.handlerContext(await run.payload(), policy({ ...logRule, delay: "5m" })));
    await run.rerunByHand();
    const out = await rerun.onTask!(h.taskContext(h.scheduled[0]!));
    expect(out).toMatchObject({
      status: "skipped",
      reason: expect.stringContaining("re-run meanwhile (now attempt 2)"),
    });
    expect(posts()).toEqual([]);
  });

  it("retries after the delay when the API says the run is already running", async () => {
    const run = await failedRun();
    // Someone else's re-run won the race: GitHub refuses this one.
    gh.hub.control.setFault(RERUN, { status: 403, message: "This workflow is already running", times: 1 });
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toMatchObject({ status: "done", summary: expect.stringContaining("retrying in 30s") });
    expect(h.scheduled).toHaveLength(1);
    expect(h.scheduled[0]!.key).toMatch(/:busy:1$/);
    expect(h.reports).toEqual([]);

    const retried = await rerun.onTask!(h.taskContext(h.scheduled[0]!));
    expect(retried).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs", "rerun-failed-jobs"]);
    expect(h.reports).toHaveLength(1);
    expect(attemptOf(run.id)).toBe(2);
  });

  it("gives up on a run that stays busy, with the reason in the check run", async () => {
    const run = await failedRun();
    gh.hub.control.setFault(RERUN, { status: 403, message: "This workflow is already running", times: 10 });
    await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    let out;
    while (h.scheduled.length > 0) out = await rerun.onTask!(h.taskContext(h.scheduled.shift()!));
    expect(posts()).toHaveLength(6);
    expect(out).toEqual({
      status: "skipped",
      reason: expect.stringContaining('"This workflow is already running" after 6 tries'),
    });
    expect(h.reports).toHaveLength(1);
    expect(h.reports[0]!.title).toMatch(/Could not re-run/);
  });

  it("late deliveries do not re-run an attempt that was already re-run", async () => {
    const run = await failedRun();
    const payload = await run.payload();
    await run.rerunByHand();
    const out = await rerun.handle(h.handlerContext(payload, policy(logRule)));
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining("re-run meanwhile (now attempt 2)") });
    expect(posts()).toEqual([]);
  });

  it("records a refusal it cannot retry as skipped, with the reason in the check run", async () => {
    const run = await failedRun();
    gh.hub.control.setFault(RERUN, { status: 403, message: "This workflow run cannot be retried", times: 1 });
    const out = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule)));
    expect(out).toEqual({ status: "skipped", reason: expect.stringContaining("This workflow run cannot be retried") });
    expect(h.scheduled).toEqual([]);
    expect(h.reports[0]!.title).toMatch(/Could not re-run/);
    expect(h.reports[0]!.summary).toContain('the API refused ("This workflow run cannot be retried")');
    expect(await h.store.auditLog({ kind: "rerun_refused" })).toHaveLength(1);
  });

  it("a re-run whose answer was lost is not requested again: the retry sees the next attempt and explains", async () => {
    const run = await failedRun();
    // The request took effect, but the client saw a server error (the answer was lost).
    gh.hub.control.setFault(RERUN, { after: true, status: 502, times: 1 });
    await expect(rerun.handle(h.handlerContext(await run.payload(), policy(logRule), "r-lost"))).rejects.toThrow();
    const retry = await rerun.handle(h.handlerContext(await run.payload(1), policy(logRule), "r-lost"));
    expect(retry).toMatchObject({ status: "done" });
    expect(attemptOf(run.id)).toBe(2);
    expect(posts()).toEqual(["rerun-failed-jobs"]);
    expect(h.reports[0]!.title).not.toMatch(/Could not re-run/);
    expect(await h.store.auditLog({ kind: "rerun_refused" })).toHaveLength(0);
  });

  it("releases its claim when the API fails so a retry can decide", async () => {
    const run = await failedRun();
    gh.hub.control.setFault(RERUN, { status: 500, times: 1 });
    await expect(rerun.handle(h.handlerContext(await run.payload(), policy(logRule), "r-1"))).rejects.toThrow();
    const retry = await rerun.handle(h.handlerContext(await run.payload(), policy(logRule), "r-1"));
    expect(retry).toMatchObject({ status: "done" });
    expect(posts()).toEqual(["rerun-failed-jobs", "rerun-failed-jobs"]);
    expect(attemptOf(run.id)).toBe(2);
  });

  it("a check run on one commit explains every attempt", async () => {
    const run = await failedRun();
    await rerun.handle(h.handlerContext(await run.payload(), policy({ ...logRule, max_attempts: 3 })));
    await run.finish({ "integration-db": "Error: snapshot mismatch\n" });
    await rerun.handle(h.handlerContext(await run.payload(2), policy({ ...logRule, max_attempts: 3 })));
    expect(h.reports).toHaveLength(2);
    const summary = h.reports[1]!.summary;
    expect(summary.indexOf("attempt 2")).toBeLessThan(summary.indexOf("attempt 1\n"));
    expect(summary).toContain("re-ran the failed jobs");
    expect(summary).toContain("log matches none of [ECONNRESET]");
  });
});
