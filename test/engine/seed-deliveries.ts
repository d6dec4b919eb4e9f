// Stored deliveries for the `steward deliveries` tests, on either store: real handlers process a
// push (done) and a completed workflow run whose handler fails twice with a 503 (dead).
import { defineHandler, type HandlerModule } from "../../src/handler.js";
import { deliveryOf, examplePayload, testEngine } from "./helpers.js";

type Store = Parameters<typeof testEngine>[0];

/**
 * Records a push `<prefix>-push` and a workflow run `<prefix>-run`, processes them to the end and
 * stops. `calls` collects the delivery id of each failing attempt; `engine` overrides the test
 * engine's options (its retry backoff). The handlers are given back, to process a replay with.
 */
export async function seedDoneAndDead(
  store: Store,
  prefix: string,
  opts: { calls?: string[]; engine?: Parameters<typeof testEngine>[2] } = {},
) {
  const calls = opts.calls ?? [];
  const handlers: HandlerModule<any>[] = [
    defineHandler<unknown>({
      name: "pusher",
      events: ["push"],
      handle: async () => ({ status: "done", summary: "pushed" }),
    }),
    defineHandler<unknown>({
      name: "rerun",
      events: ["workflow_run.completed"],
      async handle(ctx) {
        calls.push(ctx.deliveryId);
        throw new Error(`503 Service Unavailable (attempt ${ctx.attempt})`);
      },
    }),
  ];
  const push = deliveryOf("push", examplePayload("push"), `${prefix}-push`);
  const run = deliveryOf("workflow_run", examplePayload("workflow_run", "completed"), `${prefix}-run`);
  const engine = testEngine(store, handlers, { maxAttempts: 2, ...opts.engine });
  await engine.start();
  await engine.intake.record(push);
  await engine.intake.record(run);
  await engine.idle();
  await engine.stop(1000);
  return { push, run, handlers };
}
