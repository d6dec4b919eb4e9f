// GitHub-to-Steward lag, queue time and the oldest waiting delivery's age on /metrics, from
// deliveries signed and posted over real HTTP to a running Steward against the sandbox hub.
import { describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { defineHandler } from "../../src/handler.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "./helpers.js";
import { perTest } from "./per-test.js";

const completedRun = (examples as { name: string; examples: Record<string, any>[] }[])
  .find((e) => e.name === "workflow_run")!
  .examples.find((p) => p.action === "completed")!;

const scope = perTest();

/** One sample of /metrics, by its full name with labels (`name{a="b"}`). */
function sample(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("delivery lag on /metrics", () => {
  it("measures GitHub's lag from the payload, the time queued, and the age of the oldest waiting delivery", async () => {
    const hub = await scope.hub();
    const installation = hub.control.installation("acme")!.id;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    const slow = defineHandler<undefined>({
      name: "slow",
      events: ["workflow_run"],
      async handle(ctx) {
        started.push(ctx.deliveryId);
        await released;
        return { status: "done" };
      },
    });
    const steward = await scope.steward({
      config: testConfig({
        appId: Number(hub.env.APP_ID),
        privateKey: hub.env.PRIVATE_KEY,
        apiUrl: hub.url,
        dataDir: await scope.dataDir("lag"),
        concurrency: 1,
      }),
      logger: collectingLogger("warn").logger,
      handlers: [slow],
    });
    const metrics = async () => (await fetch(`${steward.url}/metrics`)).text();
    expect(sample(await metrics(), "steward_queue_oldest_age_seconds")).toBe(0);

    // GitHub updated the run 90 s before it was delivered (an incident's lag).
    const payload = (updatedAt: Date) =>
      JSON.stringify({
        ...completedRun,
        installation: { id: installation },
        workflow_run: { ...completedRun.workflow_run, updated_at: updatedAt.toISOString() },
      });
    const first = deliveryId();
    const late = await postDelivery(steward.url, {
      body: payload(new Date(Date.now() - 90_000)),
      id: first,
      event: "workflow_run",
    });
    expect(late.status).toBe(202);
    await vi.waitFor(() => expect(started).toEqual([first]), { timeout: 30_000 });
    // The only worker is busy: the second one waits in the queue, and its wait shows.
    const second = deliveryId();
    const soon = await postDelivery(steward.url, { body: payload(new Date()), id: second, event: "workflow_run" });
    expect(soon.status).toBe(202);
    // Answered again (GitHub's redelivery): one lag sample per delivery, not per request.
    expect(
      (await postDelivery(steward.url, { body: payload(new Date()), id: second, event: "workflow_run" })).status,
    ).toBe(200);
    await vi.waitFor(
      async () => expect(sample(await metrics(), "steward_queue_oldest_age_seconds")).toBeGreaterThan(0),
      { timeout: 30_000 },
    );

    release();
    await vi.waitFor(() => expect(started).toEqual([first, second]), { timeout: 30_000 });
    await steward.engine.idle();
    const text = await metrics();
    expect(sample(text, "steward_queue_oldest_age_seconds")).toBe(0);
    // Two deliveries: one 90 s late (between the 60 s and 120 s buckets), one on time.
    const lag = (le: string) => sample(text, `steward_delivery_lag_seconds_bucket{le="${le}",event="workflow_run"}`);
    expect(sample(text, 'steward_delivery_lag_seconds_count{event="workflow_run"}')).toBe(2);
    expect(lag("60")).toBe(1);
    expect(lag("120")).toBe(2);
    expect(sample(text, 'steward_delivery_lag_seconds_sum{event="workflow_run"}')).toBeGreaterThanOrEqual(90);
    // Each claim measured; the second waited for the first to finish.
    expect(sample(text, "steward_delivery_queue_seconds_count")).toBe(2);
    expect(sample(text, "steward_delivery_queue_seconds_sum")).toBeGreaterThan(0);
  });
});
