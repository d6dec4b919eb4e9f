// GitHub's rate limit spent: a handler's API call is refused with the reset time. The delivery is
// not failed into the dead letters by backoff retries against the same wall: it waits for the
// reset (its next run is then), says so in words, however many attempts it took, and a task does
// the same. The pure decision is checked at the attempt limit; the refusal comes from the sandbox
// hub over HTTP.
import { describe, expect, it, vi } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { defineHandler } from "../../src/handler.js";
import { decideDelivery, decideTask } from "../../src/engine/retry.js";
import { rateLimitedUntil } from "../../src/api/rate-limit.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "./helpers.js";
import { perTest } from "./per-test.js";

const push = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "push")!
  .examples[0]!;
const scope = perTest();
const policy = { maxAttempts: 3, baseMs: 1_000, maxMs: 60_000 };

describe("GitHub's rate limit spent", () => {
  it("the delivery waits for the reset, saying until when, and is not parked as dead for it", async () => {
    const hub = await scope.hub();
    const installation = hub.control.installation("acme")!.id;
    const resetAt = new Date(Math.ceil((Date.now() + 3_600_000) / 1000) * 1000);
    hub.control.setRateLimit(installation, { limit: 5000, remaining: 0, resetAt });
    let runs = 0;
    const probe = defineHandler<undefined>({
      name: "probe",
      events: ["push"],
      async handle(ctx) {
        runs++;
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
        return { status: "done" };
      },
    });
    const steward = await scope.steward({
      config: testConfig({
        appId: Number(hub.env.APP_ID),
        privateKey: hub.env.PRIVATE_KEY,
        apiUrl: hub.url,
        dataDir: await scope.dataDir("rate-limited"),
      }),
      logger: collectingLogger().logger,
      handlers: [probe],
      api: { maxRateLimitWaitSeconds: 5 },
    });
    const id = deliveryId();
    const body = JSON.stringify({ ...push, installation: { id: installation, node_id: "MDIz" } });
    expect((await postDelivery(steward.url, { body, id, event: "push" })).status).toBe(202);
    const shown = await vi.waitFor(
      async () => {
        const d = (await steward.store.deliveries.getDelivery(id))!;
        expect(d.delivery.status).toBe("failed");
        return d;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(runs).toBe(1);
    expect(shown.delivery.status).toBe("failed");
    expect(shown.delivery.lastError).toMatch(
      /^probe: delayed by GitHub's rate limit until \d\d:\d\d UTC$|^probe: delayed by GitHub's rate limit until \d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
    );
    // The reset, a second of margin, and the hub's whole-second Date header (GitHub's clock, not
    // this machine's): never before the reset, and not a backoff guess either.
    expect(shown.delivery.nextRunAt.getTime()).toBeGreaterThanOrEqual(resetAt.getTime() + 1_000);
    expect(shown.delivery.nextRunAt.getTime()).toBeLessThan(resetAt.getTime() + 30_000);
  });

  it("reads the reset from a primary refusal and the wait from a secondary one", () => {
    const now = new Date("2026-12-02T12:00:00Z");
    const reset = String(now.getTime() / 1000 + 600);
    const primary = {
      status: 403,
      response: { headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset } },
    };
    // The reset plus a second's margin.
    expect(rateLimitedUntil(primary, now)).toEqual(new Date(now.getTime() + 601_000));
    // Measured against GitHub's clock when the answer carries it: this machine's runs 5 minutes fast here.
    const serverDate = new Date(now.getTime() - 300_000).toUTCString();
    const skewed = { status: 403, response: { headers: { ...primary.response.headers, date: serverDate } } };
    expect(rateLimitedUntil(skewed, now)).toEqual(new Date(now.getTime() + 901_000));
    expect(rateLimitedUntil({ status: 429, response: { headers: { "retry-after": "60" } } }, now)).toEqual(
      new Date(now.getTime() + 60_000),
    );
    // A secondary limit without retry-after: GitHub asks for at least a minute.
    expect(rateLimitedUntil({ status: 429, response: { headers: {} } }, now)).toEqual(new Date(now.getTime() + 60_000));
    // A refusal that is not a rate limit is the handler's failure as before.
    expect(rateLimitedUntil({ status: 403, response: { headers: { "x-ratelimit-remaining": "12" } } }, now)).toBe(
      undefined,
    );
    expect(rateLimitedUntil(new Error("boom"), now)).toBe(undefined);
  });

  it("past the attempt limit a rate-limited run still waits for the reset; any other failure is parked", () => {
    const now = new Date("2026-12-02T12:00:00Z");
    const reset = new Date("2026-12-02T13:00:00Z");
    const limited = {
      handler: "probe",
      status: "failed" as const,
      detail: "delayed",
      retryable: true,
      notBefore: reset,
    };
    expect(decideDelivery([limited], 7, policy, now)).toEqual({
      status: "failed",
      retryAt: reset,
      lastError: "probe: delayed",
    });
    const broken = { handler: "other", status: "failed" as const, detail: "boom", retryable: true };
    expect(decideDelivery([limited, broken], 7, policy, now).status).toBe("dead");
    expect(decideDelivery([broken], 1, policy, now)).toMatchObject({
      status: "failed",
      retryAt: new Date(now.getTime() + 1_000),
    });
    expect(decideTask("delayed", true, 9, policy, now, reset)).toEqual({
      status: "retry",
      retryAt: reset,
      lastError: "delayed",
    });
    expect(decideTask("boom", true, 3, policy, now).status).toBe("dead");
  });
});
