import { describe, expect, it } from "vitest";
import { pino } from "pino";
import { defineHandler, type HandlerEventName, type HandlerModule } from "../../src/handler.js";
import type { LoadedPolicy } from "../../src/policy/types.js";
import { deliveryOf, examplePayload, fakeOctokits, fakePolicies, testEngine } from "./helpers.js";
import { sqliteStorePerTest } from "./scratch-store.js";

const scratch = sqliteStorePerTest();

function makeEngine(
  handlers: HandlerModule<any>[],
  extra: { policies?: ReturnType<typeof fakePolicies>; maxAttempts?: number } = {},
) {
  const policies = extra.policies ?? fakePolicies();
  const octokits = fakeOctokits();
  const observed: string[] = [];
  const engine = (scratch.engine = testEngine(scratch.store, handlers, {
    maxAttempts: extra.maxAttempts ?? 3,
    octokits,
    policies,
    observe: { outcome: (h, s) => observed.push(`${h}:${s}`) },
  }));
  return { engine, policies, octokits, observed };
}

function withInstallation(payload: Record<string, any>, id = 42): Record<string, any> {
  return { ...payload, installation: { id, node_id: "MDIz" } };
}

describe("routing and outcomes", () => {
  it("routes real payloads by event and action and records each handler's outcome", async () => {
    const seen: string[] = [];
    const record = (name: string, events: HandlerEventName[]) =>
      defineHandler<unknown>({
        name,
        events,
        async handle(ctx) {
          seen.push(`${name}<-${ctx.name}.${ctx.action ?? ""}`);
          return name === "quiet"
            ? { status: "skipped", reason: "nothing to do" }
            : { status: "done", summary: `saw ${ctx.deliveryId}` };
        },
      });
    const { engine: e, observed } = makeEngine([
      record("completed-only", ["workflow_run.completed"]),
      record("every-run", ["workflow_run"]),
      record("quiet", ["*"]),
      record("pusher", ["push"]),
    ]);
    await e.start();
    const completed = deliveryOf("workflow_run", withInstallation(examplePayload("workflow_run", "completed")));
    const requested = deliveryOf("workflow_run", withInstallation(examplePayload("workflow_run", "requested")));
    const push = deliveryOf("push", examplePayload("push"));
    for (const d of [completed, requested, push]) expect(await e.intake.record(d)).toBe("recorded");
    expect(await e.intake.record(completed)).toBe("duplicate");
    await e.idle();

    expect(seen.sort()).toEqual(
      [
        "completed-only<-workflow_run.completed",
        "every-run<-workflow_run.completed",
        "every-run<-workflow_run.requested",
        "pusher<-push.",
        "quiet<-push.",
        "quiet<-workflow_run.completed",
        "quiet<-workflow_run.requested",
      ].sort(),
    );
    const shown = await scratch.store.deliveries.getDelivery(completed.id);
    expect(shown?.delivery.status).toBe("done");
    expect(shown?.outcomes.map((o) => [o.handler, o.status, o.detail, o.attempts])).toEqual([
      ["completed-only", "done", `saw ${completed.id}`, 1],
      ["every-run", "done", `saw ${completed.id}`, 1],
      ["quiet", "skipped", "nothing to do", 1],
    ]);
    expect((await scratch.store.deliveries.getDelivery(push.id))?.outcomes.map((o) => o.handler)).toEqual([
      "pusher",
      "quiet",
    ]);
    expect(observed.filter((o) => o === "quiet:skipped")).toHaveLength(3);
  });

  it("gives handlers a context bound to the delivery: payload, installation, octokit, policy, store", async () => {
    let captured:
      { installationId: number | undefined; attempt: number; payload: unknown; octokit: unknown } | undefined;
    let policySeen: unknown;
    const answer: LoadedPolicy = {
      sections: { probe: { enabled: true } },
      problems: [],
      sources: ["x"],
      given: ["probe"],
    };
    const {
      engine: e,
      octokits,
      policies,
    } = makeEngine(
      [
        defineHandler<{ enabled: boolean }>({
          name: "probe",
          events: ["workflow_run.completed"],
          policy: { key: "probe", schema: {}, defaults: { enabled: false } },
          async handle(ctx) {
            captured = {
              installationId: ctx.installationId,
              attempt: ctx.attempt,
              payload: ctx.payload as unknown,
              octokit: ctx.octokit,
            };
            policySeen = ctx.policy;
            await ctx.store.set("probe:last", ctx.deliveryId);
            expect(await ctx.loadPolicy({ owner: "octo-org", repo: "other" })).toEqual({ enabled: true });
          },
        }),
      ],
      { policies: fakePolicies(answer) },
    );
    await e.start();
    const d = deliveryOf("workflow_run", withInstallation(examplePayload("workflow_run", "completed"), 77));
    await e.intake.record(d);
    await e.idle();
    expect(captured?.installationId).toBe(77);
    expect(captured?.attempt).toBe(1);
    expect((captured?.payload as any).workflow_run.id).toBe(JSON.parse(d.payload).workflow_run.id);
    expect((captured?.octokit as any).installationId).toBe(77);
    expect(policySeen).toEqual({ enabled: true });
    expect(octokits.requested).toEqual([77]);
    expect(policies.loads).toEqual([d.repository, "octo-org/other"]);
    expect(await scratch.store.kv.get("probe:last")).toBe(d.id);
    expect((await scratch.store.deliveries.getDelivery(d.id))?.outcomes[0]?.status).toBe("done");
  });

  it("never runs a handler on an invalid policy: skipped naming FILE:LINE:COL of the first problem", async () => {
    let ran = 0;
    const answer: LoadedPolicy = {
      sections: { other: {} },
      given: ["other"],
      problems: [
        {
          file: ".github/steward.yml",
          line: 2,
          column: 3,
          message: "warning only",
          path: ["rerun"],
          severity: "warning",
        },
        {
          file: ".github/steward.yml",
          line: 4,
          column: 5,
          message: 'unknown key "max_atempts"',
          path: ["rerun", "max_atempts"],
          severity: "error",
        },
        { file: ".github/steward.yml", line: 9, column: 1, message: "second", path: ["rerun"], severity: "error" },
      ],
      sources: [".github/steward.yml"],
    };
    const { engine: e } = makeEngine(
      [
        defineHandler<unknown>({
          name: "rerun",
          events: ["workflow_run"],
          policy: { key: "rerun", schema: {}, defaults: {} },
          async handle() {
            ran++;
          },
        }),
      ],
      { policies: fakePolicies(answer) },
    );
    await e.start();
    const d = deliveryOf("workflow_run", withInstallation(examplePayload("workflow_run", "completed")));
    await e.intake.record(d);
    await e.idle();
    expect(ran).toBe(0);
    const o = (await scratch.store.deliveries.getDelivery(d.id))!.outcomes[0]!;
    expect(o.status).toBe("skipped");
    expect(o.detail).toBe('invalid policy: .github/steward.yml:4:5: unknown key "max_atempts"');
  });

  it("parses a payload only when a handler reads it, or for a push that may change the policy", async () => {
    const ran: string[] = [];
    const handler = (name: string, reads: boolean) =>
      defineHandler<unknown>({
        name,
        events: ["workflow_run", "push"],
        policy: { key: name, schema: {}, defaults: {} },
        async handle(ctx) {
          // "quiet" decides from the event alone, as a handler skipping an action it does not act on.
          ran.push(`${name}<-${ctx.name}${reads ? `:${typeof ctx.payload}` : ""}`);
          return { status: "done" };
        },
      });
    const answer: LoadedPolicy = {
      sections: { on: {}, off: {}, quiet: {} },
      given: ["on", "quiet"],
      problems: [],
      sources: [".github/steward.yml"],
    };
    const { engine: e, policies } = makeEngine([handler("on", true), handler("off", true), handler("quiet", false)], {
      policies: fakePolicies(answer),
    });
    await e.start();
    // The text is not JSON (a payload file damaged on disk, say): only a handler that reads it finds out.
    const run = deliveryOf("workflow_run", withInstallation(examplePayload("workflow_run", "completed")));
    const push = deliveryOf("push", withInstallation(examplePayload("push")));
    const policyPush = deliveryOf("push", withInstallation(examplePayload("push")));
    const fine = deliveryOf("workflow_run", withInstallation(examplePayload("workflow_run", "completed")));
    const damaged = [
      { ...run, payload: "{ not json" },
      { ...push, payload: "{ not json" },
      { ...policyPush, payload: '{ "modified": [".github/steward.yml"' },
    ];
    for (const d of [...damaged, fine]) expect(await e.intake.record(d)).toBe("recorded");
    await e.idle();
    const outcomes = async (id: string) =>
      (await scratch.store.deliveries.getDelivery(id))!.outcomes.map((o) => [o.handler, o.status, o.detail]);
    const offSkipped = ["off", "skipped", expect.stringContaining('no "off" section')];
    const unparsable = (name: string) => [name, "failed", "stored payload is not valid JSON"];
    expect(await outcomes(run.id)).toEqual([offSkipped, unparsable("on"), ["quiet", "done", undefined]]);
    // A push whose text could name a policy file is read before its policy is (it may change it);
    // one whose text cannot is read as late as any other delivery.
    expect(await outcomes(policyPush.id)).toEqual([unparsable("off"), unparsable("on"), unparsable("quiet")]);
    expect(await outcomes(push.id)).toEqual([offSkipped, unparsable("on"), ["quiet", "done", undefined]]);
    expect(await outcomes(fine.id)).toEqual([offSkipped, ["on", "done", undefined], ["quiet", "done", undefined]]);
    expect(ran.sort()).toEqual([
      "on<-workflow_run:object",
      "quiet<-push",
      "quiet<-workflow_run",
      "quiet<-workflow_run",
    ]);
    // The policy was loaded for the repository the intake read from the payload, without parsing it.
    expect(policies.loads.sort()).toEqual([run.repository, push.repository, fine.repository].sort());
  });

  it("invalidates the policy cache when a push touches policy files, before routing", async () => {
    const { engine: e, policies } = makeEngine([
      defineHandler<unknown>({ name: "p", events: ["push"], async handle() {} }),
    ]);
    await e.start();
    const plain = examplePayload("push");
    const touching = examplePayload("push");
    touching.commits = [
      { ...(touching.commits[0] ?? {}), added: [], removed: [], modified: [".github/steward/secrets.yml"] },
    ];
    touching.head_commit = null;
    await e.intake.record(deliveryOf("push", plain));
    await e.intake.record(deliveryOf("push", touching));
    await e.idle();
    expect(policies.invalidated).toEqual([touching.repository.full_name]);
  });

  it("invalidates the policy cache of a repository event's repositories, even with no handler taking it", async () => {
    const { engine: e, policies } = makeEngine([
      defineHandler<unknown>({ name: "p", events: ["workflow_run"], async handle() {} }),
    ]);
    await e.start();
    const renamed = examplePayload("repository", "renamed");
    const added = examplePayload("installation_repositories", "added");
    await e.intake.record(deliveryOf("repository", renamed));
    await e.intake.record(deliveryOf("installation_repositories", added));
    await e.idle();
    const owner = renamed.repository.full_name.split("/")[0];
    expect(policies.invalidated.sort()).toEqual(
      [
        renamed.repository.full_name,
        `${owner}/${renamed.changes.repository.name.from}`,
        ...added.repositories_added.map((r: { full_name: string }) => r.full_name),
      ].sort(),
    );
  });
});

describe("logging", () => {
  it("gives each handler a logger carrying the delivery's bindings and the handler's name", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const said = (name: string) =>
      defineHandler<unknown>({
        name,
        events: ["workflow_run"],
        async handle(ctx) {
          ctx.log.info({ step: 1 }, `${name} ran`);
          return { status: "done" };
        },
      });
    const engine = (scratch.engine = testEngine(scratch.store, [said("first"), said("second")], { logger }));
    await engine.start();
    const d = deliveryOf("workflow_run", withInstallation(examplePayload("workflow_run", "completed"), 7));
    await engine.intake.record(d);
    await engine.idle();

    const ran = lines.filter((l) => typeof l.msg === "string" && l.msg.endsWith(" ran"));
    expect(ran.map((l) => l.msg).sort()).toEqual(["first ran", "second ran"]);
    for (const l of ran) {
      const { level, time, pid, hostname, ...rest } = l;
      // The delivery's bindings, then the handler's, then the line's own fields, in that order.
      expect(Object.keys(rest)).toEqual(["delivery", "event", "installation", "repository", "handler", "step", "msg"]);
      expect(rest).toMatchObject({
        delivery: d.id,
        event: "workflow_run.completed",
        installation: 7,
        repository: d.repository,
        handler: (rest.msg as string).split(" ")[0],
      });
    }
  });
});

describe("retries", () => {
  it("re-runs only the failed handler; the other's outcome is kept and not re-run", async () => {
    const runs = { steady: 0, flaky: 0 };
    const { engine: e } = makeEngine([
      defineHandler<unknown>({
        name: "steady",
        events: ["workflow_run"],
        async handle() {
          runs.steady++;
          return { status: "done" };
        },
      }),
      defineHandler<unknown>({
        name: "flaky",
        events: ["workflow_run"],
        async handle(ctx) {
          runs.flaky++;
          if (ctx.attempt < 2) throw new Error(`transient failure on attempt ${ctx.attempt}`);
          return { status: "done", summary: `ok on attempt ${ctx.attempt}` };
        },
      }),
    ]);
    await e.start();
    const d = deliveryOf("workflow_run", examplePayload("workflow_run", "completed"));
    await e.intake.record(d);
    await e.idle();
    expect(runs).toEqual({ steady: 1, flaky: 2 });
    const shown = (await scratch.store.deliveries.getDelivery(d.id))!;
    expect(shown.delivery.status).toBe("done");
    expect(shown.delivery.attempts).toBe(2);
    expect(shown.outcomes.map((o) => [o.handler, o.status, o.attempts, o.detail])).toEqual([
      ["flaky", "done", 2, "ok on attempt 2"],
      ["steady", "done", 1, undefined],
    ]);
  });

  it("backs off, then parks the delivery as dead with the last error, secrets redacted", async () => {
    const attempts: number[] = [];
    const { engine: e, observed } = makeEngine(
      [
        defineHandler<unknown>({
          name: "broken",
          events: ["push"],
          async handle(ctx) {
            attempts.push(ctx.attempt);
            throw new Error(
              `API said no (attempt ${ctx.attempt}) with token ghs_abcdefghijklmnop1234 and test-webhook-secret`,
            );
          },
        }),
      ],
      { maxAttempts: 3 },
    );
    await e.start();
    const d = deliveryOf("push", examplePayload("push"));
    await e.intake.record(d);
    await e.idle();
    expect(attempts).toEqual([1, 2, 3]);
    const shown = (await scratch.store.deliveries.getDelivery(d.id))!;
    expect(shown.delivery.status).toBe("dead");
    expect(shown.delivery.lastError).toContain("broken: API said no (attempt 3)");
    expect(shown.delivery.lastError).not.toContain("ghs_abcdefghijklmnop1234");
    expect(shown.delivery.lastError).not.toContain("test-webhook-secret");
    expect(shown.outcomes[0]).toMatchObject({ status: "failed", attempts: 3, retryable: true });
    expect(observed).toEqual(["broken:failed", "broken:failed", "broken:failed"]);
  });

  it("does not retry a failure marked not retryable, and one handler's failure does not stop another", async () => {
    let other = 0;
    const { engine: e } = makeEngine([
      defineHandler<unknown>({
        name: "final",
        events: ["push"],
        handle: async () => ({ status: "failed", error: "bad input", retryable: false }),
      }),
      defineHandler<unknown>({ name: "other", events: ["push"], handle: async () => void other++ }),
    ]);
    await e.start();
    const d = deliveryOf("push", examplePayload("push"));
    await e.intake.record(d);
    await e.idle();
    const shown = (await scratch.store.deliveries.getDelivery(d.id))!;
    expect(shown.delivery).toMatchObject({ status: "dead", attempts: 1, lastError: "final: bad input" });
    expect(other).toBe(1);
  });

  it("replays a dead delivery through every handler", async () => {
    let failing = true;
    const calls: string[] = [];
    const { engine: e } = makeEngine(
      [
        defineHandler<unknown>({ name: "a", events: ["push"], handle: async () => void calls.push("a") }),
        defineHandler<unknown>({
          name: "b",
          events: ["push"],
          async handle() {
            calls.push("b");
            if (failing) throw new Error("down");
          },
        }),
      ],
      { maxAttempts: 1 },
    );
    await e.start();
    const d = deliveryOf("push", examplePayload("push"));
    await e.intake.record(d);
    await e.idle();
    expect((await scratch.store.deliveries.getDelivery(d.id))!.delivery.status).toBe("dead");
    failing = false;
    await e.replay(d.id);
    await e.idle();
    expect(calls.sort()).toEqual(["a", "a", "b", "b"]);
    const shown = (await scratch.store.deliveries.getDelivery(d.id))!;
    expect(shown.delivery.status).toBe("done");
    expect(shown.outcomes.map((o) => o.attempts)).toEqual([1, 1]);
    await expect(e.replay("no-such-delivery")).rejects.toThrow(/no stored delivery/);
  });
});

describe("lifecycle", () => {
  it("bounds concurrency by config and stops returning unfinished work to the queue", async () => {
    let running = 0;
    let peak = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { engine: e } = makeEngine([
      defineHandler<unknown>({
        name: "slow",
        events: ["push"],
        async handle() {
          running++;
          peak = Math.max(peak, running);
          await gate;
          running--;
        },
      }),
    ]);
    await e.start();
    const ds = Array.from({ length: 6 }, () => deliveryOf("push", examplePayload("push")));
    for (const d of ds) await e.intake.record(d);
    while (running < 4) await new Promise((r) => setTimeout(r, 5));
    await e.stop(10);
    expect(peak).toBe(4);
    expect(await e.intake.ready()).toBe(false);
    const statuses = await Promise.all(
      ds.map(async (d) => (await scratch.store.deliveries.getDelivery(d.id))!.delivery),
    );
    expect(statuses.every((d) => d.status === "queued" && d.attempts === 0)).toBe(true);
    release();
    await new Promise((r) => setTimeout(r, 20));
    // The released runs finished after losing their lease: they recorded nothing.
    const after = await Promise.all(ds.map(async (d) => (await scratch.store.deliveries.getDelivery(d.id))!));
    expect(after.every((d) => d.delivery.status === "queued" && d.outcomes.length === 0)).toBe(true);
  });

  it("calls each handler's start with a service context whose scheduler is its own", async () => {
    const ran: string[] = [];
    const { engine: e } = makeEngine([
      defineHandler<unknown>({
        name: "sync",
        events: [],
        async start(ctx) {
          await ctx.scheduler.schedule({ key: "periodic", runAt: new Date(), data: { from: "start" } });
        },
        async handle() {},
        async onTask(ctx) {
          ran.push(`${ctx.key}:${JSON.stringify(ctx.data)}`);
        },
      }),
    ]);
    await e.start();
    await e.idle();
    expect(ran).toEqual(['periodic:{"from":"start"}']);
    await e.schedulerFor("sync").schedule({ key: "manual", runAt: new Date(), data: 1 });
    await e.idle();
    expect(ran).toEqual(['periodic:{"from":"start"}', "manual:1"]);
  });
});
