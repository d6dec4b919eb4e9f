// Organisation gates by repository custom property, in the sandbox hub: the admin repository's
// policy gates `production` of every `tier: critical` repository (read through
// GET /orgs/{org}/properties/values); a repository's own file can add conditions, never remove the
// gate's, and the answer says when it tried.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, ORG, REPO, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

const ORG_POLICY = `deployments:
  environments: {}
  by_property:
    - property: tier
      values: [critical]
      environments:
        production:
          branches: [main]
`;

function orgPolicy(yaml: string): void {
  w.stack.hub.control.pushFiles({
    owner: ORG,
    repo: ".github",
    files: { ".github/steward.yml": yaml },
    message: "organisation policy",
  });
}
const decided = () => [...w.effects("protection_rule.approved"), ...w.effects("protection_rule.rejected")];

// Room for the world's waits (w.until, up to 60 s each) on a loaded machine.
describe("organisation gates by custom property", { timeout: 180_000 }, () => {
  it("gates a critical repository by the organisation's rule even though its own file says approve: always", async () => {
    orgPolicy(ORG_POLICY);
    w.stack.hub.domains.properties.setValues(ORG, REPO, { tier: "critical" });
    w.pushPolicy("deployments:\n  environments:\n    production:\n      approve: always\n");
    w.environment("production", { rule: true });
    const run = w.startDeploy({ branch: "feature/login", jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the answer");
    const rejected = w.effects("protection_rule.rejected");
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.detail).toMatchObject({ run_id: run });
    const comment = rejected[0]!.detail.comment as string;
    expect(comment).toContain(
      "organisation gate (tier: critical): `feature/login` may not deploy to production (allowed: `main`)",
    );
    expect(comment).toContain(
      "`approve: always` for production has no effect: the organisation gates production for repositories with tier: critical",
    );
    const reads = w.stack.hub.control.requests().filter((r) => r.path === `/orgs/${ORG}/properties/values`);
    expect(reads.length).toBeGreaterThan(0);
    // Asked again on each evaluation; an unchanged answer is a 304 (free of rate limit).
    expect(reads.every((r) => r.status === 200 || r.status === 304)).toBe(true);
  });

  it("decides by the property as it is now: a change applies to the next deployment, an unchanged one is re-read for free", async () => {
    orgPolicy(ORG_POLICY);
    w.stack.hub.domains.properties.setValues(ORG, REPO, { tier: "critical" });
    w.pushPolicy("deployments:\n  environments:\n    production:\n      approve: always\n");
    w.environment("production", { rule: true });
    const first = w.startDeploy({ branch: "feature/login", jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the first answer");
    expect(w.effects("protection_rule.rejected").map((e) => e.detail.run_id)).toEqual([first]);

    const readsBefore = w.stack.hub.control.requests().length;
    const second = w.startDeploy({ branch: "feature/login", jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 2, "the second answer");
    expect(w.effects("protection_rule.rejected").map((e) => e.detail.run_id)).toEqual([first, second]);
    const propertyReads = () =>
      w.stack.hub.control
        .requests()
        .slice(readsBefore)
        .filter((r) => r.path === `/orgs/${ORG}/properties/values`);
    expect(propertyReads().length).toBeGreaterThan(0);
    expect(propertyReads().every((r) => r.status === 304)).toBe(true);

    // The repository leaves the critical tier: the very next deployment is judged by its own file.
    w.stack.hub.domains.properties.setValues(ORG, REPO, { tier: "standard" });
    const third = w.startDeploy({ branch: "feature/login", jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 3, "the third answer");
    expect(w.effects("protection_rule.approved").map((e) => e.detail.run_id)).toEqual([third]);
  });

  it("leaves repositories without the property to their own file", async () => {
    orgPolicy(ORG_POLICY);
    w.stack.hub.domains.properties.setValues(ORG, REPO, { tier: "standard" });
    w.pushPolicy("deployments:\n  environments:\n    production:\n      approve: always\n");
    w.environment("production", { rule: true });
    w.startDeploy({ branch: "feature/login", jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the answer for a standard repository");
    expect(w.effects("protection_rule.approved")[0]!.detail.comment).toContain(
      "every deployment to production is approved by policy",
    );
  });

  it("lets a critical repository tighten the gate (approve: never), with no loosening noted", async () => {
    orgPolicy(ORG_POLICY);
    w.stack.hub.domains.properties.setValues(ORG, REPO, { tier: "critical" });
    w.pushPolicy("deployments:\n  environments:\n    production:\n      approve: never\n");
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the answer for the tightened repository");
    const comment = w.effects("protection_rule.rejected")[0]!.detail.comment as string;
    expect(comment).toContain("no deployment to production is approved by policy");
    expect(comment).not.toContain("has no effect");
  });

  it("gates a critical repository that has no deployments policy of its own", async () => {
    orgPolicy(ORG_POLICY);
    w.stack.hub.domains.properties.setValues(ORG, REPO, { tier: "critical" });
    w.environment("production", { rule: true });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => decided().length === 1, "the answer");
    expect(w.effects("protection_rule.approved")[0]!.detail.comment).toContain(
      "organisation gate (tier: critical): `main` may deploy to production",
    );
  });
});
