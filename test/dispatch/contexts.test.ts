// What a handler and a task see: every documented field as an own property (a spread of the
// context copies them all, the lazy ones read through), through a real delivery and a real task
// run by the sandbox stack.
import { afterEach, describe, expect, it } from "vitest";
import { defineHandler } from "../../src/index.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { outcomeOf } from "../../src/testing.js";

const COMMON = [
  "attempt",
  "checks",
  "config",
  "loadPolicy",
  "log",
  "now",
  "octokit",
  "once",
  "scheduler",
  "signal",
  "store",
];

let seen: { delivery?: Record<string, unknown>; task?: Record<string, unknown> } = {};

const inspect = defineHandler({
  name: "inspect",
  events: ["pull_request.opened"],
  async handle(ctx) {
    const copy = { ...ctx };
    seen.delivery = {
      keys: Object.keys(ctx).sort(),
      repo: copy.payload.repository.full_name,
      sameOctokit: copy.octokit === ctx.octokit,
      octokitRequests: typeof ctx.octokit.request,
      now: ctx.now() instanceof Date,
      aborted: ctx.signal.aborted,
    };
    await ctx.scheduler.schedule({
      key: `later-${ctx.payload.number}`,
      runAt: new Date(0),
      data: { n: ctx.payload.number },
      installationId: ctx.installationId,
    });
    return { status: "done", summary: "inspected" };
  },
  async onTask(ctx) {
    seen.task = {
      keys: Object.keys(ctx).sort(),
      key: ctx.key,
      data: ctx.data,
      octokitRequests: typeof ctx.octokit.request,
      attempt: ctx.attempt,
    };
  },
});

let stack: SandboxStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  seen = {};
});

describe("handler and task contexts", { timeout: 60_000 }, () => {
  it("hold every field as an own property, octokit and payload read through", async () => {
    stack = await startSandboxStack({ handlers: [inspect] });
    const pr = stack.hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "ctx",
      title: "ctx",
      files: { "ctx.txt": "x\n" },
    });
    await stack.hub.control.settled();
    const delivery = stack.hub.control
      .deliveries()
      .find((d) => d.event === "pull_request" && (d.payload as { number?: number }).number === pr.number)!;
    expect((await outcomeOf(stack, delivery.guid, "inspect")).status).toBe("done");
    expect(seen.delivery).toEqual({
      keys: [...COMMON, "action", "deliveryId", "installationId", "name", "payload", "policy", "policySources"].sort(),
      repo: "acme/web",
      sameOctokit: true,
      octokitRequests: "function",
      now: true,
      aborted: false,
    });
    await expect.poll(() => seen.task, { timeout: 30_000 }).toBeDefined();
    expect(seen.task).toEqual({
      keys: [...COMMON, "data", "installationId", "key"].sort(),
      key: `later-${pr.number}`,
      data: { n: pr.number },
      octokitRequests: "function",
      attempt: 1,
    });
  });
});
