// Type tests: `npm test` type-checks this file (tsc over test/), so a payload that stops being
// inferred from the event names fails the build; the runtime assertions keep vitest honest too.
import type { EmitterWebhookEvent } from "@octokit/webhooks";
import { describe, expect, expectTypeOf, it } from "vitest";
import { defineHandler, type HandlerContext, type PayloadOf } from "../../src/index.js";

describe("defineHandler infers the payload from its event names", () => {
  it("one event with an action: that action's payload", () => {
    const h = defineHandler({
      name: "typed",
      events: ["workflow_run.completed"],
      async handle(ctx) {
        expectTypeOf(ctx.payload).toEqualTypeOf<EmitterWebhookEvent<"workflow_run.completed">["payload"]>();
        expectTypeOf(ctx.payload.action).toEqualTypeOf<"completed">();
        expectTypeOf(ctx.payload.workflow_run.conclusion).toEqualTypeOf<
          EmitterWebhookEvent<"workflow_run.completed">["payload"]["workflow_run"]["conclusion"]
        >();
        // @ts-expect-error a workflow_run delivery has no pull_request
        void ctx.payload.pull_request;
        return { status: "done" };
      },
    });
    expect(h.events).toEqual(["workflow_run.completed"]);
  });

  it("several events: the union of their payloads, narrowed by their own fields", () => {
    defineHandler({
      name: "union",
      events: ["issues.opened", "pull_request.closed"],
      async handle(ctx) {
        expectTypeOf(ctx.payload).toEqualTypeOf<PayloadOf<"issues.opened"> | PayloadOf<"pull_request.closed">>();
        expectTypeOf(ctx.payload.action).toEqualTypeOf<"opened" | "closed">();
        if ("pull_request" in ctx.payload) expectTypeOf(ctx.payload.pull_request.merged).toEqualTypeOf<boolean>();
        else expectTypeOf(ctx.payload.issue.number).toEqualTypeOf<number>();
      },
    });
  });

  it("an event without an action: every action's payload", () => {
    defineHandler({
      name: "all-runs",
      events: ["workflow_run"],
      async handle(ctx) {
        expectTypeOf(ctx.payload.action).toEqualTypeOf<"completed" | "in_progress" | "requested">();
      },
    });
  });

  it("the policy section types ctx.policy alongside the events", () => {
    defineHandler({
      name: "with-policy",
      events: ["push"],
      policy: { key: "with-policy", schema: { type: "object" }, defaults: { label: "x" } as { label: string } },
      async handle(ctx) {
        expectTypeOf(ctx.policy).toEqualTypeOf<{ label: string } | undefined>();
        expectTypeOf(ctx.payload.ref).toEqualTypeOf<string>();
      },
    });
  });

  it("unknown event names are refused at compile time", () => {
    // @ts-expect-error "workflow_runs" is not a GitHub event
    defineHandler({ name: "typo", events: ["workflow_runs"], async handle() {} });
    expectTypeOf<HandlerContext<"*">["payload"]>().toEqualTypeOf<EmitterWebhookEvent["payload"]>();
  });
});
