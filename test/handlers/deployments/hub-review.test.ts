// The deployments handler as a required reviewer in the sandbox hub: pending deployments reviewed
// with the reviewer token (a secret: only sent to the hub, never logged), the hub's 403/422, and
// deployment_review deliveries kept as an audit trail.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  isFinalRefusal,
  listPendingDeployments,
  reviewPendingDeployment,
  reviewerOctokitFrom,
} from "../../../handlers/deployments/answer.js";
import { outcomeOf } from "../../../src/testing.js";
import { createWorld, ORG, REPO, REVIEWER, type World } from "./world.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

const POLICY = `deployments:
  environments:
    production:
      branches: [main]
    "preview-*":
      approve: always
`;

const reviews = () => [...w.effects("review.approved"), ...w.effects("review.rejected")];

// Room for the world's waits (w.until, up to 60 s each) on a loaded machine.
describe("required reviewer in the sandbox hub", { timeout: 180_000 }, () => {
  it("approves a pending deployment with the reviewer token and audits the review delivery", async () => {
    w.pushPolicy(POLICY);
    w.environment("preview-42", { reviewers: [REVIEWER] });
    const run = w.startDeploy({ branch: "feature/x", jobs: [{ name: "deploy", environment: "preview-42" }] });
    await w.until(() => w.effects("gate.approved").length > 0, "the gate to open");
    expect(reviews()).toEqual([
      expect.objectContaining({
        kind: "deployments.review.approved",
        by: `user:${REVIEWER}`,
        detail: expect.objectContaining({
          run_id: run,
          environment: "preview-42",
          comment:
            "Steward approved the deployment to preview-42:\n- every deployment to preview-42 is approved by policy",
        }),
      }),
    ]);

    await w.until(
      () =>
        w.stack.hub.control
          .deliveries()
          .some((d) => d.event === "deployment_review" && d.action === "approved" && d.status_code === 202),
      "the review delivery",
    );
    const reviewDelivery = w.stack.hub.control
      .deliveries()
      .find((d) => d.event === "deployment_review" && d.action === "approved")!;
    expect(await outcomeOf(w, reviewDelivery.guid, "deployments")).toMatchObject({ status: "done" });
    const audit = await w.steward.store.kv.auditLog({ kind: "deployment_review" });
    expect(audit.map((a) => a.details)).toContainEqual(
      expect.objectContaining({
        action: "approved",
        by: REVIEWER,
        runId: run,
        environments: ["preview-42"],
        repository: `${ORG}/${REPO}`,
      }),
    );
    expect(audit.map((a) => a.details)).toContainEqual(expect.objectContaining({ action: "requested", runId: run }));

    // The reviewer's token went only to the pending-deployments routes, and never into a log line.
    const asUser = w.stack.hub.control.requests().filter((r) => r.auth === "user");
    expect(asUser.length).toBeGreaterThan(0);
    for (const r of asUser) expect(r.path).toBe(`/repos/${ORG}/${REPO}/actions/runs/${run}/pending_deployments`);
    const token = w.stack.config.reviewerToken!;
    expect(w.logLines.length).toBeGreaterThan(0);
    expect(w.logLines.some((l) => l.includes(token))).toBe(false);
  });

  it("rejects a pending deployment from a branch the policy does not allow, once", async () => {
    w.pushPolicy(POLICY);
    w.environment("production", { reviewers: [REVIEWER] });
    const run = w.startDeploy({ branch: "feature/x", jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("gate.rejected").length > 0, "the gate to close");
    await w.settle();
    expect(reviews()).toHaveLength(1);
    expect(w.effects("review.rejected")[0]!.detail).toMatchObject({
      run_id: run,
      comment: expect.stringContaining("`feature/x` may not deploy to production (allowed: `main`)"),
    });
  });

  it("does not review where the reviewer may not approve", async () => {
    w.pushPolicy(POLICY);
    w.environment("production", { reviewers: ["octo-admin"] });
    w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("gate.opened").length > 0, "the gate");
    await w.settle();
    expect(reviews()).toEqual([]);
    expect(w.effects("gate.approved")).toEqual([]);
  });

  it("is refused by the hub with 403 for an installation token and 422 for someone who is not a required reviewer", async () => {
    w.environment("production", { reviewers: [REVIEWER] });
    const run = w.startDeploy({ jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => w.effects("gate.opened").length > 0, "the gate");
    const installation = await w.steward.octokits.octokitFor(w.stack.hub.control.installation(ORG)!.id);
    const outsider = reviewerOctokitFrom({
      ...w.stack.config,
      reviewerToken: w.stack.hub.control.userToken("dev-dana"),
    })!;
    const target = { owner: ORG, repo: REPO, runId: run };
    const [pending] = await listPendingDeployments(outsider, target);
    expect(pending).toMatchObject({ environment: "production", currentUserCanApprove: false });

    const denied = await reviewPendingDeployment(installation, target, {
      environmentId: pending!.environmentId,
      state: "approved",
      comment: "x",
    }).catch((e: unknown) => e);
    expect(denied).toMatchObject({ status: 403 });
    expect(isFinalRefusal(denied)).toBe(true);
    const invalid = await reviewPendingDeployment(outsider, target, {
      environmentId: pending!.environmentId,
      state: "approved",
      comment: "x",
    }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 422 });
    expect(isFinalRefusal(invalid)).toBe(true);
    expect(reviews()).toEqual([]);
  });
});
