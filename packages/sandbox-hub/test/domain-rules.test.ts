import { describe, expect, it } from "vitest";
import {
  jobsReadyToStart,
  jobsToSkip,
  planRerun,
  runConclusion,
  stepConclusions,
  type JobView,
} from "../src/actions/plan.js";
import { checkRunBodyProblems, latestPerName, runsBeyondNameLimit, suiteOutcome } from "../src/checks/rules.js";
import { gateOutcome, mayReview, PROTECTION_TIMEOUT_MS } from "../src/deployments/rules.js";
import { applySelection, nameProblems } from "../src/scoped-values/scopes.js";

const job = (name: string, conclusion: JobView["conclusion"], needs: string[] = []): JobView => ({
  name,
  needs,
  status: conclusion ? "completed" : "queued",
  conclusion,
});

describe("workflow run decisions", () => {
  it("concludes a run from its jobs", () => {
    expect(runConclusion(["success", "skipped"])).toBe("success");
    expect(runConclusion(["success", "cancelled", "failure"])).toBe("failure");
    expect(runConclusion(["success", "timed_out"])).toBe("timed_out");
    expect(runConclusion(["skipped", "skipped"])).toBe("skipped");
  });

  it("starts jobs whose needs succeeded and skips those whose needs did not", () => {
    const jobs = [
      job("build", "success"),
      job("lint", "failure"),
      job("test", null, ["build"]),
      job("pkg", null, ["lint"]),
      job("e2e", null, ["test"]),
    ];
    expect(jobsReadyToStart(jobs)).toEqual(["test"]);
    expect(jobsToSkip(jobs)).toEqual(["pkg"]);
  });

  it("plans a failed-jobs re-run as failed jobs plus transitive dependents", () => {
    const jobs = [
      job("a", "success"),
      job("b", "failure", ["a"]),
      job("c", "skipped", ["b"]),
      job("d", "success"),
      job("e", "cancelled"),
    ];
    const plan = planRerun({ status: "completed", attempt: 1, jobs }, "failed");
    expect(plan).toMatchObject({ allowed: true, rerun: ["b", "c", "e"], keep: ["a", "d"] });
    expect(planRerun({ status: "completed", attempt: 1, jobs }, "all")).toMatchObject({
      allowed: true,
      rerun: ["a", "b", "c", "d", "e"],
      keep: [],
    });
  });

  it("refuses running runs, the attempt after the cap, and failed-jobs re-runs with nothing failed", () => {
    expect(planRerun({ status: "in_progress", attempt: 1, jobs: [] }, "all")).toMatchObject({
      allowed: false,
      status: 403,
      message: "This workflow is already running",
    });
    expect(planRerun({ status: "waiting", attempt: 1, jobs: [] }, "failed")).toMatchObject({
      allowed: false,
      message: "This workflow is already running",
    });
    expect(planRerun({ status: "completed", attempt: 51, jobs: [job("a", "failure")] }, "failed")).toMatchObject({
      allowed: false,
      message: "This workflow run cannot be retried",
    });
    expect(planRerun({ status: "completed", attempt: 50, jobs: [job("a", "failure")] }, "failed").allowed).toBe(true);
    expect(planRerun({ status: "completed", attempt: 1, jobs: [job("a", "success")] }, "failed").allowed).toBe(false);
  });

  it("marks steps before the failing one successful and later ones skipped", () => {
    expect(stepConclusions(4, "failure", 1)).toEqual(["success", "failure", "skipped", "skipped"]);
    expect(stepConclusions(2, "failure", null)).toEqual(["success", "failure"]);
    expect(stepConclusions(2, "success", null)).toEqual(["success", "success"]);
  });
});

describe("checks rules", () => {
  const ann = { path: "a", start_line: 1, end_line: 1, annotation_level: "notice", message: "m" };
  it("accepts a minimal body and rejects the API's violations", () => {
    expect(checkRunBodyProblems({ name: "n", head_sha: "abc" }, "create")).toEqual([]);
    expect(checkRunBodyProblems({ head_sha: "abc" }, "create").map((p) => p.field)).toEqual(["name"]);
    expect(
      checkRunBodyProblems({ name: "n", head_sha: "a", status: "completed" }, "create").map((p) => p.field),
    ).toEqual(["conclusion"]);
    expect(
      checkRunBodyProblems({ output: { title: "t", summary: "s", annotations: Array(51).fill(ann) } }, "update").map(
        (p) => p.field,
      ),
    ).toEqual(["output.annotations"]);
    expect(
      checkRunBodyProblems({ output: { title: "t", summary: "s", annotations: Array(50).fill(ann) } }, "update"),
    ).toEqual([]);
    expect(
      checkRunBodyProblems(
        { output: { title: "t", summary: "s", annotations: [{ ...ann, annotation_level: "error" }] } },
        "update",
      ),
    ).toHaveLength(1);
    expect(
      checkRunBodyProblems(
        { output: { title: "t", summary: "s", annotations: [{ ...ann, end_line: 3, start_column: 1 }] } },
        "update",
      ),
    ).toHaveLength(1);
    expect(checkRunBodyProblems({ output: { title: "t", summary: "s".repeat(65_536) } }, "update")).toHaveLength(1);
    expect(
      checkRunBodyProblems({ actions: [{ label: "x".repeat(21), description: "d", identifier: "i" }] }, "update"),
    ).toHaveLength(1);
  });

  it("derives a suite's status and conclusion from its runs", () => {
    expect(suiteOutcome([])).toEqual({ status: "queued", conclusion: null });
    expect(
      suiteOutcome([
        { status: "completed", conclusion: "success" },
        { status: "queued", conclusion: null },
      ]),
    ).toEqual({ status: "in_progress", conclusion: null });
    expect(
      suiteOutcome([
        { status: "completed", conclusion: "success" },
        { status: "completed", conclusion: "failure" },
      ]),
    ).toEqual({ status: "completed", conclusion: "failure" });
    expect(
      suiteOutcome([
        { status: "completed", conclusion: "neutral" },
        { status: "completed", conclusion: "skipped" },
      ]),
    ).toEqual({ status: "completed", conclusion: "neutral" });
  });

  it("keeps the newest runs per name and picks the latest run per name", () => {
    const runs = Array.from({ length: 5 }, (_, i) => ({
      id: i + 1,
      name: i < 4 ? "a" : "b",
      started_at: `2024-01-0${i + 1}T00:00:00Z`,
    }));
    expect(runsBeyondNameLimit(runs, 3).map((r) => r.id)).toEqual([1]);
    expect(latestPerName(runs).map((r) => r.id)).toEqual([4, 5]);
  });
});

describe("deployment protection rules", () => {
  const base = { reviewers: ["rm"], review: "pending" as const, rules: [], createdAtMs: 0, waitUntilMs: 0 };
  it("opens only when every rule passed, closes on any rejection, and times out after 30 days", () => {
    expect(gateOutcome(base, 1).state).toBe("pending");
    expect(gateOutcome({ ...base, review: "approved" }, 1).state).toBe("approved");
    expect(gateOutcome({ ...base, review: "approved", rules: ["pending"] }, 1).state).toBe("pending");
    expect(gateOutcome({ ...base, review: "approved", rules: ["rejected"] }, 1).state).toBe("rejected");
    expect(gateOutcome({ ...base, reviewers: [], rules: ["approved"], waitUntilMs: 10 }, 5).state).toBe("pending");
    expect(gateOutcome({ ...base, reviewers: [], rules: ["approved"], waitUntilMs: 10 }, 10).state).toBe("approved");
    expect(gateOutcome(base, PROTECTION_TIMEOUT_MS - 1).state).toBe("pending");
    expect(gateOutcome(base, PROTECTION_TIMEOUT_MS).state).toBe("timed_out");
  });

  it("lets only a required reviewer (a user) review", () => {
    expect(mayReview({ kind: "user", login: "RM" }, ["rm"], "prod")).toEqual({ ok: true });
    expect(mayReview({ kind: "user", login: "dana" }, ["rm"], "prod")).toMatchObject({ ok: false, status: 422 });
    expect(mayReview({ kind: "other" }, ["rm"], "prod")).toMatchObject({ ok: false, status: 403 });
  });
});

describe("secret and variable scopes", () => {
  it("validates names and applies selection changes", () => {
    expect(nameProblems("GOOD_NAME_1", "Secret")).toEqual([]);
    expect(nameProblems("github_token", "Secret")).toHaveLength(1);
    expect(nameProblems("9LIVES", "Secret")).toHaveLength(1);
    expect(applySelection([1, 2], { add: 3 })).toEqual([1, 2, 3]);
    expect(applySelection([1, 2], { add: 2 })).toEqual([1, 2]);
    expect(applySelection([1, 2], { remove: 1 })).toEqual([2]);
    expect(applySelection([1], { set: [4, 4, 5] })).toEqual([4, 5]);
  });
});
