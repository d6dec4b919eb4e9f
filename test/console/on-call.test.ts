// What the console states is what happened, and what it does is what it shows, over real HTTP
// against the sandbox stack: "replay all" replays exactly the dead letters its filter shows (the
// `event.action` spelling the lists use included), after a confirmation naming them, and refuses a
// filter it cannot apply; a dead letter never reads "will be retried"; a replay is in the delivery's
// history with who made it; the overview's handler states are the engine's record; deliveries per
// minute are counted by when they were received, so the past does not change.
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineHandler } from "../../src/handler.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { receivedPerMinute } from "../../src/console/pages/overview.js";
import { signIn, type Visitor } from "./session.js";

let stack: SandboxStack;
let base: string;
/** Runs of the breaking handler, per `event.action`. */
const runs = new Map<string, number>();
const ran = (key: string) => runs.get(key) ?? 0;

async function settle(): Promise<void> {
  // A workflow run's completion sends deliveries of its own: settle until the hub sends no more.
  for (let i = 0; i < 20; i++) {
    const before = stack.hub.control.deliveries().length;
    await stack.hub.control.settled();
    await stack.hub.domains.idle();
    await stack.steward.engine.idle();
    if (stack.hub.control.deliveries().length === before) return;
  }
}

beforeAll(async () => {
  // Refuses for good whatever says "doom": a push's message, a workflow's name, a pull request's title.
  const breaker = defineHandler<unknown>({
    name: "breaker",
    events: ["push", "workflow_run.completed", "pull_request.opened"],
    async handle(ctx) {
      const p = ctx.payload as {
        head_commit?: { message?: string };
        workflow_run?: { name?: string };
        pull_request?: { title?: string };
      };
      const text = p.head_commit?.message ?? p.workflow_run?.name ?? p.pull_request?.title ?? "";
      if (!text.includes("doom")) return { status: "skipped", reason: "nothing doomed" };
      const key = `${ctx.name}${ctx.action ? `.${ctx.action}` : ""}`;
      runs.set(key, ran(key) + 1);
      return { status: "failed", error: `refused "${text}"`, retryable: true };
    },
  });
  // Cannot start: the engine records it retrying, with the error.
  const unstartable = defineHandler<unknown>({
    name: "unstartable",
    events: ["issues.opened"],
    async start() {
      throw new Error("the key service answered 503");
    },
    async handle() {
      return { status: "done" };
    },
  });
  const starter = defineHandler<unknown>({
    name: "starter",
    events: ["issues.opened"],
    async start() {},
    async handle() {
      return { status: "done" };
    },
  });
  stack = await startSandboxStack({
    handlers: [breaker, unstartable, starter],
    env: { STEWARD_MAX_ATTEMPTS: "1" },
    logger: pino({ level: "silent" }),
  });
  base = stack.steward.url;
  const { control, domains } = stack.hub;
  control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "1\n" }, message: "doom the web" });
  const sha = control.pushFiles({ owner: "acme", repo: "web", files: { "b.txt": "1\n" }, message: "fine" }).sha;
  const run = domains.actions.startRun({ owner: "acme", repo: "web", workflow: "doom CI", sha, jobs: [{ name: "t" }] });
  domains.actions.failJob({ runId: run.id, job: "t", log: "exit 1" });
  control.openPullRequest({ owner: "acme", repo: "web", head: "doomed", title: "doom it", files: { "c.txt": "1\n" } });
  await settle();
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

async function deadOf(event: string): Promise<string[]> {
  const page = await stack.steward.store.browse.browseDeliveries({ limit: 200, status: "dead", event });
  return page.items.map((d) => d.id);
}

const confirmedIn = (text: string) => /name="confirmed" value="([^"]+)"/.exec(text)?.[1];

describe("replay all matching dead letters", { timeout: 120_000 }, () => {
  let owner: Visitor;
  let csrf: string;
  beforeAll(async () => {
    owner = await signIn(base, "octo-admin");
    csrf = owner.csrfFrom((await owner.visit("/console/dead")).text);
  });

  it("the list's spelling event.action selects exactly those, shown, confirmed, and replayed alone", async () => {
    const [workflowDead] = await deadOf("workflow_run");
    const [pushDead] = await deadOf("push");
    const [prDead] = await deadOf("pull_request");
    expect(workflowDead && pushDead && prDead, "one dead letter of each event").toBeTruthy();

    // The dead-letters page lists it as the list spells it, filtered by that spelling only.
    const list = await owner.visit("/console/dead?event=workflow_run.completed");
    expect(list.text).toContain(workflowDead);
    expect(list.text).not.toContain(pushDead);
    expect(list.text).not.toContain(prDead);
    expect(list.text).not.toContain('role="alert"');

    const before = new Map(runs);
    const asked = await owner.visit("/console/dead/replay", { form: { csrf, event: "workflow_run.completed" } });
    expect(asked.status).toBe(200);
    expect(asked.text).toContain('Replay <strong data-k="count">1</strong> dead letter matching');
    expect(asked.text).toContain('<strong data-k="filter">event = workflow_run.completed</strong>');
    expect(asked.text).toContain(workflowDead);
    expect(asked.text).not.toContain(pushDead);
    expect(asked.text).not.toContain(prDead);
    await settle();
    expect(runs).toEqual(before);

    const done = await owner.visit("/console/dead/replay", {
      form: { csrf, event: "workflow_run.completed", confirmed: confirmedIn(asked.text)! },
    });
    expect(done.url).toContain("replayed=1");
    expect(done.text).toContain("Queued again: 1 delivery.");
    await settle();
    expect(ran("workflow_run.completed")).toBe((before.get("workflow_run.completed") ?? 0) + 1);
    expect(ran("push")).toBe(before.get("push") ?? 0);
    expect(ran("pull_request.opened")).toBe(before.get("pull_request.opened") ?? 0);
  });

  it("an event with another action matches nothing, and nothing is replayed", async () => {
    const before = new Map(runs);
    const asked = await owner.visit("/console/dead/replay", { form: { csrf, event: "workflow_run.requested" } });
    expect(asked.text).toContain("No dead letter you may replay matches");
    expect(confirmedIn(asked.text)).toBeUndefined();
    await settle();
    expect(runs).toEqual(before);
  });

  it("a filter the page cannot apply is refused visibly, on the list and for the action", async () => {
    const before = new Map(runs);
    for (const [name, value] of [
      ["event", "workflow_run.completed!"],
      ["status", "gone"],
      ["since", "yesterday"],
      ["handler", "nobody"],
    ]) {
      const list = await owner.visit(`/console/dead?${new URLSearchParams({ [name!]: value! })}`);
      expect(list.text).toContain('role="alert"');
      expect(list.text).toContain(`${name}=${value}`);
      expect(list.text).not.toContain("Replay all dead letters matching");
      const refused = await owner.request("/console/dead/replay", { form: { csrf, [name!]: value! } });
      expect(refused.status).toBe(400);
      expect(refused.text).toContain("Nothing was replayed");
      // Even with a confirmation of the unfiltered set.
      const all = await owner.visit("/console/dead/replay", { form: { csrf } });
      const sneaky = await owner.request("/console/dead/replay", {
        form: { csrf, [name!]: value!, confirmed: confirmedIn(all.text)! },
      });
      expect(sneaky.status).toBe(400);
    }
    const deliveries = await owner.visit("/console/deliveries?event=Push%20Event");
    expect(deliveries.text).toContain('role="alert"');
    await settle();
    expect(runs).toEqual(before);
  });

  it("a set that changed after it was shown is shown again, not replayed", async () => {
    const asked = await owner.visit("/console/dead/replay", { form: { csrf, event: "push" } });
    const shown = /data-k="count">(\d+)</.exec(asked.text)![1];
    stack.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "d.txt": "1\n" }, message: "doom again" });
    await settle();
    const before = new Map(runs);
    const again = await owner.visit("/console/dead/replay", {
      form: { csrf, event: "push", confirmed: confirmedIn(asked.text)! },
    });
    expect(again.status).toBe(200);
    expect(again.text).toContain("changed since you confirmed");
    expect(again.text).toContain(`data-k="count">${Number(shown) + 1}<`);
    await settle();
    expect(runs).toEqual(before);
  });
});

describe("what a delivery's page states", { timeout: 120_000 }, () => {
  it("a dead letter says it will not be retried; a replay is in its history with who made it", async () => {
    const owner = await signIn(base, "octo-admin");
    const [id] = await deadOf("pull_request");
    const page = await owner.visit(`/console/deliveries/${id}`);
    expect(page.text).toContain("dead letter: not retried");
    expect(page.text).not.toContain("will be retried");
    expect(page.text).not.toMatch(/retry due/);
    const csrf = owner.csrfFrom(page.text);
    const done = await owner.visit(`/console/deliveries/${id}/replay`, { form: { csrf } });
    expect(done.text).toContain("Queued again: 1 delivery.");
    await settle();
    const after = await owner.visit(`/console/deliveries/${id}`);
    const history = after.text.slice(after.text.indexOf('id="history"'));
    expect(history).toMatch(/replayed by <strong>octo-admin<\/strong>/);
    // Both runs are there, the one before the replay and the one after, around the replay.
    const attempts = [...history.matchAll(/data-kind="(attempt|action)"/g)].map((m) => m[1]);
    expect(attempts).toEqual(["attempt", "action", "attempt"]);
    expect(after.text).toContain("since the last replay (replayed 1 time");
    // The audit trail has it too.
    const audit = await stack.steward.store.kv.auditLog({ kind: "console_replay", limit: 50 });
    expect(audit.some((a) => a.details.delivery === id && a.details.login === "octo-admin")).toBe(true);
  });
});

describe("the overview", { timeout: 120_000 }, () => {
  it("shows each handler's start as the engine recorded it, with the last start error", async () => {
    const owner = await signIn(base, "octo-admin");
    await expect
      .poll(
        async () => {
          const text = (await owner.visit("/console")).text;
          return /data-handler="starter".*?data-k="start"><span[^>]*>(\w[\w ]*)</s.exec(text)?.[1];
        },
        { timeout: 30_000 },
      )
      .toBe("started");
    const text = (await owner.visit("/console")).text;
    const row = (h: string) => new RegExp(`data-handler="${h}">(.*?)</tr>`, "s").exec(text)![1]!;
    expect(row("unstartable")).toMatch(/retrying|starting/);
    expect(row("unstartable")).not.toContain(">started<");
    await expect
      .poll(async () => (await owner.visit("/console")).text, { timeout: 30_000 })
      .toContain("the key service answered 503");
    expect(row("breaker")).toContain("no start step");
    // The engine's record is what the page read.
    const recorded = stack.steward.engine.handlerStarts();
    expect(recorded.find((s) => s.handler === "starter")?.state).toBe("started");
    expect(recorded.find((s) => s.handler === "unstartable")?.state).not.toBe("started");
  });

  it("charts deliveries received per minute, every minute of the window, without the past changing", async () => {
    const owner = await signIn(base, "octo-admin");
    const bars = (text: string) =>
      [...text.matchAll(/data-minute="(\d+)" data-count="(\d+)"/g)].map((m) => [Number(m[1]), Number(m[2])] as const);
    const first = bars((await owner.visit("/console")).text);
    expect(first).toHaveLength(30);
    // Consecutive minutes, empty ones included.
    for (let i = 1; i < first.length; i++) expect(first[i]![0] - first[i - 1]![0]).toBe(60_000);
    const received = await stack.steward.store.browse.browseDeliveries({ limit: 200 });
    const inWindow = received.items.filter((d) => d.receivedAt.getTime() >= first[0]![0]).length;
    expect(first.reduce((n, [, c]) => n + c, 0)).toBe(inWindow);
    // Replaying dead letters changes what became of them, not when they were received.
    const csrf = owner.csrfFrom((await owner.visit("/console/dead")).text);
    const asked = await owner.visit("/console/dead/replay", { form: { csrf } });
    await owner.visit("/console/dead/replay", { form: { csrf, confirmed: confirmedIn(asked.text)! } });
    await settle();
    const later = new Map(bars((await owner.visit("/console")).text));
    for (const [minute, count] of first) if (later.has(minute)) expect(later.get(minute)).toBe(count);
  });

  it("counts each minute whatever the deliveries' statuses", () => {
    const since = Date.UTC(2026, 0, 1, 12, 0);
    const rows = receivedPerMinute(
      [
        { minute: since, count: 2 },
        { minute: since, count: 3 },
        { minute: since + 120_000, count: 1 },
      ],
      since,
      4,
    );
    expect(rows.map((r) => r.count)).toEqual([5, 0, 1, 0]);
  });
});
