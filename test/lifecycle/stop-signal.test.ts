// Handlers get an AbortSignal on their context that fires at shutdown; from then on the API
// client refuses the work's requests (none reaches the API), and the interrupted delivery goes
// back to the queue whole instead of being recorded as a failure.
import { describe, expect, it } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { defineHandler } from "../../src/handler.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!
  .examples[0]!;

const scope = perTest();

describe("the stop signal", () => {
  it("fires at shutdown; the API client then refuses the handler's requests; the delivery returns to the queue", async () => {
    const hub = await scope.hub();
    const body = JSON.stringify({
      ...push,
      installation: { id: hub.control.installation("acme")!.id, node_id: "MDIz" },
    });
    const repoReads = () => hub.control.requests().filter((r) => r.path === "/repos/acme/web");
    const dir = await scope.dataDir("signal");
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    let refusal: unknown;
    let sawAbort = false;
    const slow = defineHandler<undefined>({
      name: "slow",
      events: ["push"],
      async handle(ctx) {
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
        running();
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        sawAbort = ctx.signal.aborted;
        try {
          await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
        } catch (e) {
          refusal = e;
          throw e;
        }
        return { status: "done" };
      },
    });
    const { logger } = collectingLogger("info");
    const steward = await scope.steward({
      config: testConfig({
        appId: Number(hub.env.APP_ID),
        privateKey: hub.env.PRIVATE_KEY,
        apiUrl: hub.url,
        dataDir: dir,
        shutdownTimeoutMs: 10_000,
      }),
      logger,
      handlers: [slow],
    });
    const id = deliveryId();
    expect((await postDelivery(steward.url, { body, id, event: "push" })).status).toBe(202);
    await started;
    const before = repoReads().length;
    expect(before).toBe(1);
    await steward.close();
    expect(sawAbort).toBe(true);
    expect((refusal as Error)?.name).toBe("AbortError");
    expect(repoReads()).toHaveLength(before);

    const store = openSqliteStore(dir);
    try {
      const found = await store.deliveries.getDelivery(id);
      expect(found?.delivery.status).toBe("queued");
      expect(found?.delivery.attempts).toBe(0);
      expect(found?.outcomes).toEqual([]);
    } finally {
      store.close();
    }
  });
});
