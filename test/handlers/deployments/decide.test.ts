// Table of cases for the pure decision function: each policy key, time zones, freezes, the 30-day limit.
import { describe, expect, it } from "vitest";
import {
  evaluate,
  matchEnvironment,
  GIVE_UP_AFTER_MS,
  type DeploymentRequest,
  type Facts,
  type Evaluation,
} from "../../../handlers/deployments/decide.js";
import type { DeploymentsPolicy, EnvironmentRule } from "../../../handlers/deployments/policy.js";
import { formatComment } from "../../../handlers/deployments/comment.js";

const SHA = "abc1234def5678900000000000000000000000ff";
const parisWeekdays = {
  days: ["mon", "tue", "wed", "thu", "fri"],
  hours: "09:00-17:00",
  timezone: "Europe/Paris",
} as const;
// Saturday 2026-11-21 15:00 UTC.
const SATURDAY = new Date("2026-11-21T15:00:00Z");
// Monday 2026-11-23 10:00 Paris (09:00 UTC).
const MONDAY_MORNING = new Date("2026-11-23T09:00:00Z");

const policyOf = (environments: Record<string, EnvironmentRule>): DeploymentsPolicy => ({ environments });
const request = (over: Partial<DeploymentRequest> = {}): DeploymentRequest => ({
  environment: "production",
  ref: "refs/heads/main",
  sha: SHA,
  requestedAt: new Date(MONDAY_MORNING.getTime() - 60_000),
  ...over,
});
const facts = (over: Partial<Facts> = {}): Facts => ({ checkRuns: [], deployedTo: {}, ...over });
const onMain = { branch: { name: "main", state: "tip" as const } };
const run = (name: string, conclusion: string | null, status = conclusion ? "completed" : "in_progress") => ({
  name,
  status,
  conclusion,
});

interface Case {
  name: string;
  rule: EnvironmentRule;
  request?: Partial<DeploymentRequest>;
  facts?: Partial<Facts>;
  now?: Date;
  decision: Evaluation["decision"];
  reasons: string[];
  waitUntil?: string;
  recheckOn?: Evaluation["recheckOn"];
}

const cases: Case[] = [
  {
    name: "no conditions approve",
    rule: {},
    decision: "approve",
    reasons: ["the policy for production sets no conditions"],
  },
  {
    name: "approve: always",
    rule: { approve: "always" },
    decision: "approve",
    reasons: ["every deployment to production is approved by policy"],
  },
  {
    name: "approve: never",
    rule: { approve: "never" },
    decision: "reject",
    reasons: ["no deployment to production is approved by policy"],
  },
  {
    name: "a fork's branch named main is rejected, whatever branches allow",
    rule: { branches: ["main"] },
    request: { ref: "refs/heads/main", fork: "contributor/web" },
    decision: "reject",
    reasons: ["the code comes from fork contributor/web: Steward never approves deploying a fork's code"],
  },
  {
    name: "approve: always does not approve a fork's code",
    rule: { approve: "always" },
    request: { fork: "contributor/web" },
    decision: "reject",
    reasons: ["the code comes from fork contributor/web: Steward never approves deploying a fork's code"],
  },
  {
    name: "a fork is rejected at once, not held for checks or a window",
    rule: { branches: ["main"], checks: ["build"], after: ["staging"], windows: [parisWeekdays] },
    request: { fork: "mallory/web", requestedAt: SATURDAY },
    now: SATURDAY,
    decision: "reject",
    reasons: ["the code comes from fork mallory/web: Steward never approves deploying a fork's code"],
  },
  {
    name: "a fork's code with green checks is still rejected",
    rule: { checks: ["build"] },
    request: { fork: "contributor/web" },
    facts: { checkRuns: [run("build", "success")] },
    decision: "reject",
    reasons: ["the code comes from fork contributor/web: Steward never approves deploying a fork's code"],
  },
  {
    name: "allowed branch",
    rule: { branches: ["main", "v*"] },
    facts: { ref: onMain },
    decision: "approve",
    reasons: ["`main` may deploy to production"],
  },
  {
    name: "a commit reachable from the branch",
    rule: { branches: ["main"] },
    facts: { ref: { branch: { name: "main", state: "reachable", status: "behind" } } },
    decision: "approve",
    reasons: ["`main` may deploy to production"],
  },
  {
    name: "a commit named main that is not on main (a side branch, or a tag named main) is rejected",
    rule: { branches: ["main"] },
    request: { ref: "main" },
    facts: { ref: { branch: { name: "main", state: "off", status: "diverged" } } },
    decision: "reject",
    reasons: [
      "branch check failed: abc1234 is not on branch `main` (neither its tip nor reachable from it: diverged); only commits on `main` may deploy to production",
    ],
  },
  {
    name: "a tag is not a branch",
    rule: { branches: ["main"] },
    request: { ref: "refs/tags/main" },
    facts: { ref: onMain },
    decision: "reject",
    reasons: [
      "branch check failed: `refs/tags/main` is a tag, and a tag is not a branch; only branches `main` may deploy to production",
    ],
  },
  {
    name: "no branch of that name",
    rule: { branches: ["main"] },
    request: { ref: "main" },
    facts: { ref: { branch: { name: "main", state: "missing" } } },
    decision: "reject",
    reasons: [
      "branch check failed: there is no branch `main` (a tag of that name is not a branch); only commits on `main` may deploy to production",
    ],
  },
  {
    name: "without the repository's answer, a branch name alone passes nothing",
    rule: { branches: ["main"] },
    decision: "reject",
    reasons: [
      "branch check failed: whether abc1234 is on branch `main` is not known; only commits on `main` may deploy to production",
    ],
  },
  {
    name: "feature branch rejected",
    rule: { branches: ["main", "v*"] },
    request: { ref: "refs/heads/feature/login" },
    decision: "reject",
    reasons: ["`feature/login` may not deploy to production (allowed: `main`, `v*`)"],
  },
  {
    name: "tag matches a glob",
    rule: { branches: ["main"], tags: ["v*"] },
    request: { ref: "refs/tags/v1.2.0" },
    facts: { ref: { tag: { name: "v1.2.0", state: "at" } } },
    decision: "approve",
    reasons: ["tag `v1.2.0` may deploy to production"],
  },
  {
    name: "a tag that does not point at the commit",
    rule: { tags: ["v*"] },
    request: { ref: "refs/tags/v1.2.0" },
    facts: { ref: { tag: { name: "v1.2.0", state: "elsewhere" } } },
    decision: "reject",
    reasons: ["tag check failed: tag `v1.2.0` does not point at abc1234; only tags `v*` may deploy to production"],
  },
  {
    name: "bare branch name",
    rule: { branches: ["release/*"] },
    request: { ref: "release/2026.11" },
    facts: { ref: { branch: { name: "release/2026.11", state: "tip" } } },
    decision: "approve",
    reasons: ["`release/2026.11` may deploy to production"],
  },
  {
    name: "unknown ref cannot pass a branch rule",
    rule: { branches: ["main"] },
    request: { ref: undefined },
    decision: "reject",
    reasons: ["the ref being deployed is unknown, and only `main` may deploy to production"],
  },
  {
    name: "green checks",
    rule: { checks: ["build", "test"] },
    facts: { checkRuns: [run("build", "success"), run("test", "success"), run("lint", "failure")] },
    decision: "approve",
    reasons: ["checks `build`, `test` succeeded on abc1234"],
  },
  {
    name: "failed check",
    rule: { checks: ["build", "test"] },
    facts: { checkRuns: [run("build", "success"), run("test", "failure")] },
    decision: "reject",
    reasons: ["check `test` failed on abc1234"],
  },
  {
    name: "cancelled check",
    rule: { checks: ["test"] },
    facts: { checkRuns: [run("test", "cancelled")] },
    decision: "reject",
    reasons: ["check `test` concluded cancelled on abc1234"],
  },
  {
    name: "running check waits",
    rule: { checks: ["build", "test"] },
    facts: { checkRuns: [run("build", "success"), run("test", null)] },
    decision: "wait",
    reasons: ["check `test` is still running on abc1234"],
    recheckOn: { checks: ["test"], environments: [] },
  },
  {
    name: "missing check waits",
    rule: { checks: ["build"] },
    decision: "wait",
    reasons: ["check `build` has not started on abc1234"],
    recheckOn: { checks: ["build"], environments: [] },
  },
  {
    name: "pending check rejected with pending_checks: reject",
    rule: { checks: ["build"], pending_checks: "reject" },
    facts: { checkRuns: [run("build", null, "queued")] },
    decision: "reject",
    reasons: ["check `build` is queued on abc1234"],
  },
  {
    name: "check glob needs every match green",
    rule: { checks: ["test (*)"] },
    facts: { checkRuns: [run("test (node 20)", "success"), run("test (node 22)", "failure")] },
    decision: "reject",
    reasons: ["check `test (node 22)` failed on abc1234"],
  },
  {
    name: "a failure and a pending check: reject lists both",
    rule: { checks: ["build", "test"] },
    facts: { checkRuns: [run("build", "failure"), run("test", null)] },
    decision: "reject",
    reasons: ["check `build` failed on abc1234", "check `test` is still running on abc1234"],
  },
  {
    name: "deployed to staging first",
    rule: { after: ["staging"] },
    facts: { deployedTo: { staging: "success" } },
    decision: "approve",
    reasons: ["abc1234 deployed to staging first"],
  },
  {
    name: "never deployed to staging",
    rule: { after: ["staging"] },
    decision: "reject",
    reasons: ["abc1234 has not been deployed to staging"],
  },
  {
    name: "staging failed",
    rule: { after: ["staging"] },
    facts: { deployedTo: { staging: "failure" } },
    decision: "reject",
    reasons: ["the deployment of abc1234 to staging failed"],
  },
  {
    name: "staging in progress waits",
    rule: { after: ["staging"] },
    facts: { deployedTo: { staging: "pending" } },
    decision: "wait",
    reasons: ["the deployment of abc1234 to staging has not finished"],
    recheckOn: { checks: [], environments: ["staging"] },
  },
  {
    name: "inside the window",
    rule: { windows: [parisWeekdays] },
    decision: "approve",
    reasons: ["inside deploy window Mon-Fri 09:00-17:00 Europe/Paris"],
  },
  {
    name: "outside the window waits for the next one",
    rule: { windows: [parisWeekdays] },
    now: SATURDAY,
    request: { requestedAt: SATURDAY },
    decision: "wait",
    reasons: ["outside deploy window Mon-Fri 09:00-17:00 Europe/Paris; next window opens 2026-11-23 09:00 CET"],
    waitUntil: "2026-11-23T08:00:00.000Z",
  },
  {
    name: "outside the window rejected with outside_window: reject",
    rule: { windows: [parisWeekdays], outside_window: "reject" },
    now: SATURDAY,
    decision: "reject",
    reasons: ["outside deploy window Mon-Fri 09:00-17:00 Europe/Paris; next window opens 2026-11-23 09:00 CET"],
  },
  {
    name: "any of several windows",
    rule: { windows: [parisWeekdays, { days: ["sat"], hours: "14:00-18:00", timezone: "UTC" }] },
    now: SATURDAY,
    decision: "approve",
    reasons: ["inside deploy window Sat 14:00-18:00 UTC"],
  },
  {
    name: "freeze waits until it ends",
    rule: { freeze: [{ from: "2026-12-20T00:00:00Z", to: "2027-01-05T00:00:00Z", reason: "year-end freeze" }] },
    now: new Date("2026-12-24T12:00:00Z"),
    request: { requestedAt: new Date("2026-12-24T11:00:00Z") },
    decision: "wait",
    reasons: ["deploy freeze until 2027-01-05 00:00 UTC (year-end freeze)"],
    waitUntil: "2027-01-05T00:00:00.000Z",
  },
  {
    name: "freeze then window: waits for the first window after the freeze",
    rule: { windows: [parisWeekdays], freeze: [{ from: "2026-12-20T00:00:00Z", to: "2027-01-05T00:00:00Z" }] },
    now: new Date("2026-12-24T12:00:00Z"),
    request: { requestedAt: new Date("2026-12-24T11:00:00Z") },
    decision: "wait",
    reasons: ["deploy freeze until 2027-01-05 00:00 UTC; next window opens 2027-01-05 09:00 CET"],
    waitUntil: "2027-01-05T08:00:00.000Z",
  },
  {
    name: "freeze in a local zone",
    rule: { freeze: [{ from: "2026-11-23T08:00", to: "2026-11-23T12:00", timezone: "America/New_York" }] },
    now: new Date("2026-11-23T14:00:00Z"),
    decision: "wait",
    reasons: ["deploy freeze until 2026-11-23 12:00 EST"],
    waitUntil: "2026-11-23T17:00:00.000Z",
  },
  {
    name: "freeze over: approve",
    rule: { freeze: [{ from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z" }] },
    decision: "approve",
    reasons: ["no deploy freeze in effect (1 freeze entry checked)"],
  },
  {
    name: "waiting for 29 days: reject before GitHub gives up",
    rule: { checks: ["build"] },
    request: { requestedAt: new Date(MONDAY_MORNING.getTime() - GIVE_UP_AFTER_MS) },
    decision: "reject",
    reasons: [
      "check `build` has not started on abc1234",
      "waiting since 2026-10-25 09:00 UTC would pass the 30 days after which GitHub abandons the deployment",
    ],
  },
  {
    name: "a freeze outlasting GitHub's limit rejects at once",
    rule: { freeze: [{ from: "2026-11-01T00:00:00Z", to: "2027-02-01T00:00:00Z", reason: "migration" }] },
    decision: "reject",
    reasons: [
      "deploy freeze until 2027-02-01 00:00 UTC (migration)",
      "waiting since 2026-11-23 08:59 UTC would pass the 30 days after which GitHub abandons the deployment",
    ],
  },
  {
    name: "everything at once",
    rule: { branches: ["main"], checks: ["build"], after: ["staging"], windows: [parisWeekdays] },
    facts: { checkRuns: [run("build", "success")], deployedTo: { staging: "success" }, ref: onMain },
    decision: "approve",
    reasons: [
      "`main` may deploy to production",
      "check `build` succeeded on abc1234",
      "abc1234 deployed to staging first",
      "inside deploy window Mon-Fri 09:00-17:00 Europe/Paris",
    ],
  },
  {
    name: "a blocking reason wins over waits",
    rule: { branches: ["main"], windows: [parisWeekdays] },
    request: { ref: "refs/heads/wip" },
    now: SATURDAY,
    decision: "reject",
    reasons: [
      "`wip` may not deploy to production (allowed: `main`)",
      "outside deploy window Mon-Fri 09:00-17:00 Europe/Paris; next window opens 2026-11-23 09:00 CET",
    ],
  },
];

describe("evaluate", () => {
  it("withholds a freeze's reason and the windows' definitions where the policy's readers could not read it", () => {
    const rule: EnvironmentRule = {
      windows: [parisWeekdays],
      freeze: [{ from: "2026-12-20T00:00:00Z", to: "2027-01-05T00:00:00Z", reason: "acquisition-7c1d" }],
    };
    const now = new Date("2026-12-24T12:00:00Z");
    const why =
      "it merges the organisation's policy in acme/.github, and this repository is public and that one is private";
    const withheld = evaluate(
      policyOf({ production: rule }),
      request({ requestedAt: new Date("2026-12-24T11:00:00Z") }),
      facts(),
      now,
      { withheld: why },
    );
    expect(withheld.reasons).toEqual([
      `deploy freeze until 2027-01-05 00:00 UTC (its reason is withheld: ${why}); next window opens 2027-01-05 09:00 CET`,
    ]);
    const outside = evaluate(policyOf({ production: { windows: [parisWeekdays] } }), request(), facts(), SATURDAY, {
      withheld: why,
    });
    expect(outside.reasons.join()).not.toContain("09:00-17:00");
    expect(outside.reasons.join()).toContain(`outside deploy window (its definition is withheld: ${why})`);
  });

  it.each(cases)("$name", (c) => {
    const result = evaluate(
      policyOf({ production: c.rule }),
      request(c.request),
      facts(c.facts),
      c.now ?? MONDAY_MORNING,
    );
    expect(result.decision).toBe(c.decision);
    expect(result.reasons).toEqual(c.reasons);
    expect(result.waitUntil?.toISOString()).toBe(c.waitUntil);
    if (c.recheckOn) expect(result.recheckOn).toEqual(c.recheckOn);
    if (result.decision === "wait")
      expect(result.giveUpAt!.getTime()).toBe(request(c.request).requestedAt.getTime() + GIVE_UP_AFTER_MS);
  });

  it("leaves environments without a matching entry alone", () => {
    const result = evaluate(
      policyOf({ production: { approve: "always" } }),
      request({ environment: "qa" }),
      facts(),
      MONDAY_MORNING,
    );
    expect(result.decision).toBe("none");
    // A fork's run too: GitHub's own rules decide environments Steward has no entry for.
    expect(
      evaluate(
        policyOf({ production: { approve: "always" } }),
        request({ environment: "qa", fork: "contributor/web" }),
        facts(),
        MONDAY_MORNING,
      ).decision,
    ).toBe("none");
  });

  it("says in the comment why a fork's run was rejected", () => {
    const result = evaluate(
      policyOf({ "preview-*": { approve: "always" } }),
      request({ environment: "preview-7", fork: "contributor/web" }),
      facts(),
      MONDAY_MORNING,
    );
    expect(result).toMatchObject({ decision: "reject", matched: "preview-*" });
    expect(formatComment(result, "preview-7")).toBe(
      "Steward rejected the deployment to preview-7:\n- the code comes from fork contributor/web: Steward never approves deploying a fork's code",
    );
  });

  it("uses the first matching entry in file order, case-insensitively", () => {
    const policy = policyOf({
      "prod*": { approve: "never" },
      production: { approve: "always" },
      "preview-*": { approve: "always" },
    });
    expect(matchEnvironment(policy, "Production")?.pattern).toBe("prod*");
    expect(evaluate(policy, request(), facts(), MONDAY_MORNING).decision).toBe("reject");
    expect(evaluate(policy, request({ environment: "preview-42" }), facts(), MONDAY_MORNING)).toMatchObject({
      decision: "approve",
      matched: "preview-*",
    });
    expect(matchEnvironment(undefined, "production")).toBeUndefined();
  });
});

describe("formatComment", () => {
  it("states the decision and lists the reasons", () => {
    const text = formatComment({ decision: "reject", reasons: ["check `test` failed on abc1234"] }, "production");
    expect(text).toBe("Steward rejected the deployment to production:\n- check `test` failed on abc1234");
  });

  it("tells a waiting deployment when it will be given up", () => {
    const text = formatComment(
      { decision: "wait", reasons: ["x"], giveUpAt: new Date("2026-12-20T10:00:00Z") },
      "production",
    );
    expect(text).toContain("rejected at 2026-12-20 10:00 UTC if still waiting");
  });

  it("cuts long comments with a note", () => {
    const text = formatComment(
      { decision: "reject", reasons: Array.from({ length: 100 }, (_, i) => `reason number ${i} is long enough`) },
      "production",
    );
    expect(text.length).toBeLessThanOrEqual(1000);
    expect(text.endsWith("… (cut)")).toBe(true);
  });
});

describe("checks pinned to an app", () => {
  const byApp = (
    name: string,
    app: string,
    conclusion: string | null,
    id: number,
    status = conclusion ? "completed" : "in_progress",
  ) => ({ name, status, conclusion, app, id, startedAt: `2026-11-23T08:${String(id).padStart(2, "0")}:00Z` });
  const pinned: EnvironmentRule = { checks: [{ name: "ci", app: "github-actions" }] };
  const decide = (rule: EnvironmentRule, runs: Facts["checkRuns"], all = true) =>
    evaluate(policyOf({ production: rule }), request(), facts({ checkRuns: runs, allCheckRuns: all }), MONDAY_MORNING);

  it("does not count another app's success, and says whose run it waits for", () => {
    const impostor = [byApp("ci", "other-app", "success", 1)];
    // Unpinned, as before: any app's run of the name passes.
    expect(decide({ checks: ["ci"] }, impostor, false)).toMatchObject({
      decision: "approve",
      reasons: ["check `ci` succeeded on abc1234"],
    });
    const held = decide(pinned, impostor);
    expect(held).toMatchObject({
      decision: "wait",
      reasons: [
        "check `ci` has not started on abc1234 from github-actions (a run of that name from `other-app` is not counted)",
      ],
      recheckOn: { checks: ["ci"], environments: [] },
    });
    expect(decide({ ...pinned, pending_checks: "reject" }, impostor).decision).toBe("reject");
  });

  it("approves on the pinned app's success, which another app's failure, newer or not, does not block", () => {
    const runs = [byApp("ci", "github-actions", "success", 1), byApp("ci", "other-app", "failure", 2)];
    expect(decide(pinned, runs)).toMatchObject({
      decision: "approve",
      reasons: ["check `ci` (github-actions) succeeded on abc1234"],
    });
    // Unpinned, the newest run of the name counts, whoever made it.
    expect(decide({ checks: ["ci"] }, runs)).toMatchObject({
      decision: "reject",
      reasons: ["check `ci` failed on abc1234"],
    });
  });

  it("judges the pinned app's newest run, and accepts any of several apps", () => {
    const rerun = [byApp("ci", "github-actions", "failure", 1), byApp("ci", "github-actions", "success", 2)];
    expect(decide(pinned, rerun).decision).toBe("approve");
    expect(
      decide(pinned, [byApp("ci", "github-actions", "success", 1), byApp("ci", "github-actions", "failure", 2)]),
    ).toMatchObject({ decision: "reject", reasons: ["check `ci` (github-actions) failed on abc1234"] });
    expect(decide(pinned, [byApp("ci", "github-actions", null, 3)])).toMatchObject({
      decision: "wait",
      reasons: ["check `ci` (github-actions) is still running on abc1234"],
    });
    const either: EnvironmentRule = { checks: [{ name: "ci", apps: ["github-actions", "buildkite"] }] };
    expect(decide(either, [byApp("ci", "buildkite", "success", 1)])).toMatchObject({
      decision: "approve",
      reasons: ["check `ci` (buildkite) succeeded on abc1234"],
    });
    // A run whose app is unknown is never counted for a pinned check.
    expect(decide(pinned, [{ name: "ci", status: "completed", conclusion: "success" }]).decision).toBe("wait");
  });
});
