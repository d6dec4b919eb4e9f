// Table of cases for the pure re-run decision.
import { describe, expect, it } from "vitest";
import {
  classifyJob,
  decide,
  logsToFetch,
  type DecideInput,
  type JobFacts,
  type RunFacts,
} from "../../../handlers/rerun/decide.js";
import { rerunPolicy, type RerunPolicy } from "../../../handlers/rerun/policy.js";

const SHA = "a".repeat(40);

function policy(over: Partial<RerunPolicy> = {}): RerunPolicy {
  return { ...rerunPolicy.defaults, enabled: true, delay: "0s", ...over };
}

function run(over: Partial<RunFacts> = {}): RunFacts {
  return {
    id: 10,
    name: "CI",
    path: ".github/workflows/ci.yml",
    event: "push",
    headBranch: "main",
    headSha: SHA,
    conclusion: "failure",
    runAttempt: 1,
    pullRequests: [],
    ...over,
  };
}

let nextJob = 100;
function job(name: string, conclusion: string | null, failedStep?: string): JobFacts {
  const steps = [{ name: "Set up job", conclusion: "success" }];
  if (failedStep) steps.push({ name: failedStep, conclusion: "failure" });
  return { id: nextJob++, name, conclusion, steps };
}

function input(over: Partial<DecideInput> & { jobs: JobFacts[] }): DecideInput {
  return {
    policy: policy(),
    run: run(),
    logs: new Map(),
    current: { source: "branch main", sha: SHA },
    ...over,
  };
}

const lostRunner = { runner_lost: true } as const;
const netLog = { log: ["ECONNRESET", "/lost communication with the server/i"] };

interface Case {
  name: string;
  in: () => DecideInput;
  decision: "skip" | "give_up" | "rerun";
  reason: RegExp;
  rules?: (number | undefined)[];
}

const cases: Case[] = [
  {
    name: "disabled by default",
    in: () => input({ policy: { ...rerunPolicy.defaults }, jobs: [job("build", "failure")] }),
    decision: "skip",
    reason: /not enabled/,
  },
  {
    name: "successful run is out of scope",
    in: () => input({ run: run({ conclusion: "success" }), jobs: [] }),
    decision: "skip",
    reason: /concluded "success"/,
  },
  {
    name: "cancelled run is out of scope unless a rule names cancelled",
    in: () => input({ run: run({ conclusion: "cancelled" }), jobs: [job("build", "cancelled")] }),
    decision: "skip",
    reason: /concluded "cancelled"/,
  },
  {
    name: "cancelled run with a rule naming cancelled is re-run",
    in: () =>
      input({
        policy: policy({ rules: [{ conclusions: ["cancelled"] }] }),
        run: run({ conclusion: "cancelled" }),
        jobs: [job("build", "cancelled"), job("lint", "success")],
      }),
    decision: "rerun",
    reason: /all 1 failed jobs are transient/,
    rules: [0],
  },
  {
    name: "a fork pull request's run is out of scope by default",
    in: () =>
      input({
        run: run({ event: "pull_request", headBranch: "main", fromFork: "contributor/web" }),
        jobs: [job("build", "failure")],
      }),
    decision: "skip",
    reason: /^run of fork pull request from contributor\/web; rerun\.forks is false$/,
  },
  {
    name: "a fork's run is out of scope before any other condition, even with rules: []",
    in: () =>
      input({
        policy: policy({ rules: [], events: ["pull_request"] }),
        run: run({ event: "pull_request", fromFork: "mallory/web", conclusion: "failure" }),
        jobs: [job("build", "failure")],
      }),
    decision: "skip",
    reason: /rerun\.forks is false/,
  },
  {
    name: "rerun.forks: true re-runs a fork's transient failure like any other",
    in: () =>
      input({
        policy: policy({ forks: true }),
        run: run({ event: "pull_request", fromFork: "contributor/web" }),
        current: { source: "pull request #3", sha: SHA },
        jobs: [job("build", "failure")],
      }),
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "a run of the repository's own code is not a fork's (fromFork null)",
    in: () => input({ run: run({ event: "pull_request", fromFork: null }), jobs: [job("build", "failure")] }),
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "schedule is excluded when events is absent",
    in: () => input({ run: run({ event: "schedule" }), jobs: [job("build", "failure")] }),
    decision: "skip",
    reason: /event "schedule"/,
  },
  {
    name: "schedule is in scope when listed",
    in: () =>
      input({
        policy: policy({ events: ["schedule"] }),
        run: run({ event: "schedule" }),
        jobs: [job("build", "failure")],
      }),
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "event not listed",
    in: () => input({ policy: policy({ events: ["pull_request"] }), jobs: [job("build", "failure")] }),
    decision: "skip",
    reason: /event "push" is not in rerun.events/,
  },
  {
    name: "workflow matched by path",
    in: () =>
      input({
        policy: policy({ workflows: [".github/workflows/ci.yml"] }),
        run: run({ name: "Build", path: ".github/workflows/ci.yml@refs/heads/main" }),
        jobs: [job("b", "failure")],
      }),
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "workflow matched by name glob",
    in: () => input({ policy: policy({ workflows: ["C*"] }), jobs: [job("b", "failure")] }),
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "workflow not listed",
    in: () => input({ policy: policy({ workflows: ["e2e.yml", "Deploy"] }), jobs: [job("b", "failure")] }),
    decision: "skip",
    reason: /workflow "CI" is not in rerun.workflows/,
  },
  {
    name: "branch glob matches",
    in: () =>
      input({
        policy: policy({ branches: ["release/*"] }),
        run: run({ headBranch: "release/1.2" }),
        current: { source: "branch release/1.2", sha: SHA },
        jobs: [job("b", "failure")],
      }),
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "branch not listed",
    in: () => input({ policy: policy({ branches: ["release/*"] }), jobs: [job("b", "failure")] }),
    decision: "skip",
    reason: /branch "main" is not in rerun.branches/,
  },
  {
    name: "superseded by a newer commit",
    in: () => input({ current: { source: "pull request #4", sha: "b".repeat(40) }, jobs: [job("b", "failure")] }),
    decision: "skip",
    reason: /superseded: pull request #4 is now at bbbbbbb/,
  },
  {
    name: "branch deleted",
    in: () => input({ current: { source: "branch main", sha: null }, jobs: [job("b", "failure")] }),
    decision: "skip",
    reason: /no longer exists/,
  },
  {
    name: "currency unknown",
    in: () => input({ current: { source: "fork pull request", sha: undefined }, jobs: [job("b", "failure")] }),
    decision: "skip",
    reason: /cannot tell/,
  },
  {
    name: "no failed job",
    in: () => input({ jobs: [job("b", "success"), job("c", "skipped")] }),
    decision: "skip",
    reason: /no failed job/,
  },
  {
    name: "too many failed jobs",
    in: () =>
      input({
        policy: policy({ max_failed_jobs: 2 }),
        jobs: [job("a", "failure"), job("b", "failure"), job("c", "timed_out")],
      }),
    decision: "give_up",
    reason: /3 jobs failed, more than rerun.max_failed_jobs \(2\)/,
  },
  {
    name: "attempts exhausted",
    in: () => input({ policy: policy({ max_attempts: 3 }), run: run({ runAttempt: 3 }), jobs: [job("a", "failure")] }),
    decision: "give_up",
    reason: /attempt 3 of 3: attempts exhausted/,
    rules: [undefined],
  },
  {
    name: "below the attempt cap",
    in: () => input({ policy: policy({ max_attempts: 3 }), run: run({ runAttempt: 2 }), jobs: [job("a", "failure")] }),
    decision: "rerun",
    reason: /attempt 3 of 3/,
  },
  {
    name: "runner lost rule matches a job without a failed step",
    in: () => input({ policy: policy({ rules: [lostRunner] }), jobs: [job("test", "failure")] }),
    decision: "rerun",
    reason: /transient/,
    rules: [0],
  },
  {
    name: "runner lost rule does not match a failed step",
    in: () => input({ policy: policy({ rules: [lostRunner] }), jobs: [job("test", "failure", "Run tests")] }),
    decision: "give_up",
    reason: /1 of 1 failed jobs are not transient: test/,
    rules: [undefined],
  },
  {
    name: "job and step globs",
    in: () =>
      input({
        policy: policy({ rules: [{ jobs: ["integration-*"], steps: ["Install*"] }] }),
        jobs: [job("integration-db", "failure", "Install deps")],
      }),
    decision: "rerun",
    reason: /transient/,
    rules: [0],
  },
  {
    name: "job glob mismatch",
    in: () =>
      input({
        policy: policy({ rules: [{ jobs: ["integration-*"], steps: ["Install*"] }] }),
        jobs: [job("unit", "failure", "Install deps")],
      }),
    decision: "give_up",
    reason: /not transient: unit/,
  },
  {
    name: "step glob mismatch",
    in: () =>
      input({ policy: policy({ rules: [{ steps: ["Install*"] }] }), jobs: [job("unit", "failure", "Run tests")] }),
    decision: "give_up",
    reason: /not transient/,
  },
  {
    name: "default conclusions cover timed_out but not cancelled",
    in: () => input({ policy: policy({ rules: [{ jobs: ["*"] }] }), jobs: [job("slow", "timed_out")] }),
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "conclusions narrow the rule",
    in: () => input({ policy: policy({ rules: [{ conclusions: ["timed_out"] }] }), jobs: [job("a", "failure")] }),
    decision: "give_up",
    reason: /not transient/,
  },
  {
    name: "log substring",
    in: () => {
      const j = job("e2e", "failure", "Test");
      return input({
        policy: policy({ rules: [netLog] }),
        jobs: [j],
        logs: new Map([[j.id, "npm ERR! read ECONNRESET"]]),
      });
    },
    decision: "rerun",
    reason: /transient/,
    rules: [0],
  },
  {
    name: "log regex with flags",
    in: () => {
      const j = job("e2e", "failure");
      return input({
        policy: policy({ rules: [netLog] }),
        jobs: [j],
        logs: new Map([[j.id, "The runner has received a shutdown signal. Lost Communication With The Server"]]),
      });
    },
    decision: "rerun",
    reason: /transient/,
  },
  {
    name: "log without a match is a real failure",
    in: () => {
      const j = job("e2e", "failure", "Test");
      return input({
        policy: policy({ rules: [netLog] }),
        jobs: [j],
        logs: new Map([[j.id, "expected 2 to equal 3"]]),
      });
    },
    decision: "give_up",
    reason: /not transient: e2e/,
  },
  {
    name: "unavailable log is not transient",
    in: () => input({ policy: policy({ rules: [netLog] }), jobs: [job("e2e", "failure")] }),
    decision: "give_up",
    reason: /not transient/,
  },
  {
    name: "first matching rule wins",
    in: () => {
      const j = job("e2e", "failure");
      return input({
        policy: policy({ rules: [{ jobs: ["unit"] }, lostRunner, netLog] }),
        jobs: [j],
        logs: new Map([[j.id, "ECONNRESET"]]),
      });
    },
    decision: "rerun",
    reason: /transient/,
    rules: [1],
  },
  {
    name: "one real failure among transient ones",
    in: () =>
      input({
        policy: policy({ rules: [lostRunner] }),
        jobs: [job("a", "failure"), job("b", "failure", "Compile"), job("c", "success")],
      }),
    decision: "give_up",
    reason: /1 of 2 failed jobs are not transient: b/,
    rules: [0, undefined],
  },
  {
    name: "empty rules treat every failure in scope as transient",
    in: () => input({ jobs: [job("a", "failure", "Compile")] }),
    decision: "rerun",
    reason: /transient/,
  },
];

describe("decide", () => {
  it.each(cases)("$name", (c) => {
    const d = decide(c.in());
    expect(d.decision).toBe(c.decision);
    expect(d.reasons.join("\n")).toMatch(c.reason);
    if (c.rules) expect(d.verdicts.map((v) => v.rule)).toEqual(c.rules);
  });

  it("re-runs in the policy's mode after its delay", () => {
    const d = decide(input({ policy: policy({ mode: "workflow", delay: "5m" }), jobs: [job("a", "failure")] }));
    expect(d).toMatchObject({ decision: "rerun", mode: "workflow", delayMs: 300_000 });
  });

  it("reports both a real failure and exhausted attempts", () => {
    const d = decide(
      input({
        policy: policy({ rules: [lostRunner], max_attempts: 2 }),
        run: run({ runAttempt: 2 }),
        jobs: [job("b", "failure", "Compile")],
      }),
    );
    expect(d.decision).toBe("give_up");
    expect(d.reasons).toHaveLength(2);
  });
});

describe("logsToFetch", () => {
  it("asks only for logs a rule would read", () => {
    const a = job("integration-a", "failure", "Install");
    const b = job("unit", "failure", "Test");
    const c = job("lost", "failure");
    const p = policy({ rules: [lostRunner, { jobs: ["integration-*"], log: ["ECONNRESET"] }] });
    expect(logsToFetch(p, run(), [a, b, c])).toEqual([a.id]);
  });

  it("asks for no log of a fork's run (its logs say what the fork wants)", () => {
    const failing = job("integration-db", "failure");
    expect(logsToFetch(policy({ rules: [netLog] }), run({ fromFork: "contributor/web" }), [failing])).toEqual([]);
    expect(
      logsToFetch(policy({ rules: [netLog], forks: true }), run({ fromFork: "contributor/web" }), [failing]),
    ).toEqual([failing.id]);
  });

  it("asks for nothing out of scope or past max_failed_jobs", () => {
    const jobs = [job("a", "failure"), job("b", "failure")];
    expect(logsToFetch(policy({ enabled: false, rules: [netLog] }), run(), jobs)).toEqual([]);
    expect(logsToFetch(policy({ max_failed_jobs: 1, rules: [netLog] }), run(), jobs)).toEqual([]);
    expect(logsToFetch(policy({ rules: [netLog] }), run(), jobs)).toEqual(jobs.map((j) => j.id));
  });
});

describe("classifyJob", () => {
  it("explains every rule that did not match", () => {
    const v = classifyJob(
      [{ jobs: ["x"] }, { steps: ["Install*"] }, { conclusions: ["timed_out"] }],
      job("y", "failure", "Test"),
      null,
    );
    expect(v.transient).toBe(false);
    expect(v.reason).toContain("rule 1: job name not in [x]");
    expect(v.reason).toContain('rule 2: failed step "Test" not in [Install*]');
    expect(v.reason).toContain('rule 3: conclusion "failure" not in [timed_out]');
  });
});
