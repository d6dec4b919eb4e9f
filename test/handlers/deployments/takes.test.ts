// What the deployments handler takes (handlers/deployments/index.ts `takes`): runs and jobs only
// while it can answer a waiting run as its required reviewer. Without a reviewer token every run
// and job delivery is recorded done at the intake and never run; the rest it takes as before.
import { examples as webhookExamples } from "../../support/webhook-examples.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Steward } from "../../../src/app.js";
import { routeDelivery } from "../../../src/dispatch/route.js";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { createDeploymentsHandler } from "../../../handlers/deployments/index.js";

let stack: SandboxStack;
beforeAll(
  async () =>
    void (stack = await startSandboxStack({
      handlers: [createDeploymentsHandler()],
      env: { STEWARD_REVIEWER_TOKEN: "" },
    })),
);
afterAll(() => stack?.close());

function example(event: string, action: string): Record<string, any> {
  const group = (webhookExamples as unknown as { name: string; examples: Record<string, any>[] }[]).find(
    (g) => g.name === event,
  )!;
  const found = group.examples.find((e) => e.action === action);
  if (!found) throw new Error(`no ${event}.${action} example`);
  const repo = stack.hub.control.repo("acme", "web")!;
  return {
    ...structuredClone(found),
    repository: {
      ...found.repository,
      id: repo.id,
      name: "web",
      full_name: "acme/web",
      owner: { ...found.repository.owner, login: "acme" },
    },
  };
}

describe("deployments handler: what it takes", () => {
  it("without a reviewer token, settles every run and job delivery at the intake; a completed check suite still runs", async () => {
    expect(stack.config.reviewerToken).toBeUndefined();
    const store = (stack.steward as unknown as Steward).store;
    const sent = new Map<string, string>();
    for (const [event, action] of [
      ["workflow_run", "requested"],
      ["workflow_job", "queued"],
      ["workflow_job", "waiting"],
      ["check_suite", "completed"],
    ] as const) {
      const record = await stack.hub.state.deliver(event, example(event, action));
      expect(record?.status_code, `${event}.${action}`).toBe(202);
      sent.set(`${event}.${action}`, record!.guid);
    }
    await stack.hub.control.settled();
    await (stack.steward as unknown as Steward).engine.idle();
    for (const [name, id] of sent) {
      const got = await store.deliveries.getDelivery(id);
      expect(got?.delivery.status, name).toBe("done");
      if (name === "check_suite.completed") {
        expect(got?.delivery.attempts, name).toBe(1);
        expect(
          got?.outcomes.map((o) => o.handler),
          name,
        ).toEqual(["deployments"]);
      } else {
        expect(got?.delivery.attempts, name).toBe(0);
        expect(got?.outcomes, name).toEqual([]);
      }
    }
  });

  it("takes runs and jobs when a reviewer token is configured or a reviewer client is given", () => {
    const waiting = { event: "workflow_job", action: "waiting", repository: "acme/web" };
    expect(routeDelivery([createDeploymentsHandler()], waiting, stack.config)).toHaveLength(0);
    expect(
      routeDelivery([createDeploymentsHandler()], waiting, { ...stack.config, reviewerToken: "reviewer-token" }),
    ).toHaveLength(1);
    const given = createDeploymentsHandler({ reviewerOctokit: () => ({}) as never });
    expect(routeDelivery([given], { ...waiting, event: "workflow_run", action: "requested" }, stack.config)).toEqual([
      given,
    ]);
    for (const event of ["deployment_protection_rule", "deployment_review", "check_run", "deployment_status"]) {
      expect(
        routeDelivery(
          [createDeploymentsHandler()],
          {
            event,
            action: event === "check_run" ? "completed" : event === "deployment_status" ? undefined : "requested",
            repository: "acme/web",
          },
          stack.config,
        ),
        event,
      ).toHaveLength(1);
    }
  });
});
