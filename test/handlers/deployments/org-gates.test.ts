// Organisation gates, pure: which gates apply, how they combine with the repository's rule (all
// must pass), and what counts as loosening.
import { describe, expect, it } from "vitest";
import { evaluateGated, gateFindings, gatesFor, loosenings } from "../../../handlers/deployments/org-gates.js";
import type { DeploymentsPolicy } from "../../../handlers/deployments/policy.js";

const ORG: DeploymentsPolicy = {
  environments: {},
  by_property: [
    {
      property: "tier",
      values: ["critical"],
      environments: { "prod*": { branches: ["main", "release/*"], checks: ["build"], pending_checks: "reject" } },
    },
    {
      property: "teams",
      values: ["payments"],
      environments: {
        production: { freeze: [{ from: "2026-12-20T00:00:00Z", to: "2027-01-05T00:00:00Z", reason: "year-end" }] },
      },
    },
  ],
};
const request = (ref: string) => ({
  environment: "production",
  ref,
  sha: "b".repeat(40),
  requestedAt: new Date("2026-11-24T09:00:00Z"),
});
// The sha is the tip of main (what the handler reads from the repository for a rule with branches).
const green = {
  checkRuns: [{ name: "build", status: "completed", conclusion: "success" }],
  deployedTo: {},
  ref: { branch: { name: "main", state: "tip" as const } },
};

describe("organisation gates", () => {
  it("apply by property value, multi-select values included, and by environment glob", () => {
    expect(gatesFor(ORG, { tier: "critical" }, "production").map((g) => [g.label, g.pattern])).toEqual([
      ["tier: critical", "prod*"],
    ]);
    expect(gatesFor(ORG, { tier: "critical", teams: ["web", "payments"] }, "production").map((g) => g.label)).toEqual([
      "tier: critical",
      "teams: payments",
    ]);
    expect(gatesFor(ORG, { tier: "standard" }, "production")).toEqual([]);
    expect(gatesFor(ORG, { tier: "critical" }, "staging")).toEqual([]);
  });

  it("need the gate and the repository's rule both to pass", () => {
    const gates = gatesFor(ORG, { tier: "critical" }, "production");
    const repo: DeploymentsPolicy = { environments: { production: { checks: ["e2e"] } } };
    const now = new Date("2026-11-24T09:00:00Z");
    const both = evaluateGated(
      repo,
      gates,
      request("refs/heads/main"),
      { ...green, checkRuns: [...green.checkRuns, { name: "e2e", status: "completed", conclusion: "success" }] },
      now,
    );
    expect(both.decision).toBe("approve");
    // The repository's e2e still runs: the repository's rule holds it.
    expect(
      evaluateGated(
        repo,
        gates,
        request("refs/heads/main"),
        { ...green, checkRuns: [...green.checkRuns, { name: "e2e", status: "in_progress", conclusion: null }] },
        now,
      ).decision,
    ).toBe("wait");
    // The gate's build has not run: the gate rejects (pending_checks: reject).
    const noBuild = evaluateGated(
      repo,
      gates,
      request("refs/heads/main"),
      { checkRuns: [{ name: "e2e", status: "completed", conclusion: "success" }], deployedTo: {} },
      now,
    );
    expect(noBuild.decision).toBe("reject");
    expect(noBuild.reasons).toContain("organisation gate (tier: critical): check `build` has not started on bbbbbbb");
  });

  it("ignore a repository's approve: always and say so", () => {
    const gates = gatesFor(ORG, { tier: "critical" }, "production");
    const repo: DeploymentsPolicy = { environments: { production: { approve: "always" } } };
    const e = evaluateGated(repo, gates, request("refs/heads/feature"), green, new Date("2026-11-24T09:00:00Z"));
    expect(e.decision).toBe("reject");
    expect(e.reasons).toEqual([
      "organisation gate (tier: critical): `feature` may not deploy to production (allowed: `main`, `release/*`)",
      "`approve: always` for production has no effect: the organisation gates production for repositories with tier: critical",
    ]);
  });

  it("count approve: always, branches outside the gate's and wait-for-reject as loosening, and nothing else", () => {
    const [gate] = gatesFor(ORG, { tier: "critical" }, "production");
    expect(
      loosenings(gate!, "production", {
        approve: "never",
        branches: ["main", "release/1.x"],
        checks: ["e2e"],
        pending_checks: "reject",
      }),
    ).toEqual([]);
    expect(
      loosenings(gate!, "production", { branches: ["main", "hotfix/*"], pending_checks: "wait", approve: "always" }),
    ).toEqual([
      "`approve: always` for production has no effect: the organisation gates production for repositories with tier: critical",
      "branches `hotfix/*` may not deploy to production all the same: the organisation gates production for repositories with tier: critical (allowed: `main`, `release/*`)",
      "`pending_checks: wait` for production has no effect (the gate says reject): the organisation gates production for repositories with tier: critical",
    ]);
  });

  it("tell steward/config where, and that a repository's own by_property has no effect", () => {
    const repo: DeploymentsPolicy = {
      environments: { "prod*": { approve: "always" } },
      by_property: [{ property: "tier", values: ["x"], environments: {} }],
    };
    expect(gateFindings(ORG, repo, { tier: "critical" })).toEqual([
      {
        path: ["deployments", "by_property"],
        message: "by_property is read from the organisation policy (admin repository) only: here it has no effect",
      },
      {
        path: ["deployments", "environments", "prod*", "approve"],
        message:
          "`approve: always` for prod* has no effect: the organisation gates prod* for repositories with tier: critical",
      },
    ]);
    // Without the property no gate applies: only the misplaced by_property is reported.
    expect(gateFindings(ORG, repo, { tier: "standard" }).map((f) => f.path)).toEqual([["deployments", "by_property"]]);
  });
});
