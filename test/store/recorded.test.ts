// The one outcome-to-detail mapping (src/store/recorded.ts): what both backends, the engine's
// retry decision and `steward deliveries show` keep and show of a handler's outcome.
import { describe, expect, it } from "vitest";
import type { Outcome } from "../../src/handler.js";
import { DETAIL_FIELD, outcomeRecord } from "../../src/store/recorded.js";
import { decideDelivery } from "../../src/engine/retry.js";
import { formatShow } from "../../src/cli/commands/deliveries.js";

describe("what is kept of an outcome", () => {
  it.each<[Outcome, ReturnType<typeof outcomeRecord>]>([
    [
      { status: "done", summary: "labelled #4" },
      { status: "done", detail: "labelled #4", retryable: true },
    ],
    [{ status: "done" }, { status: "done", detail: undefined, retryable: true }],
    [
      { status: "skipped", reason: "not a fork" },
      { status: "skipped", detail: "not a fork", retryable: true },
    ],
    [
      { status: "failed", error: "502 from the API" },
      { status: "failed", detail: "502 from the API", retryable: true },
    ],
    [
      { status: "failed", error: "bad policy", retryable: false },
      { status: "failed", detail: "bad policy", retryable: false },
    ],
  ])("%j", (outcome, kept) => {
    expect(outcomeRecord(outcome)).toEqual(kept);
    expect(kept.detail).toBe((outcome as unknown as Record<string, unknown>)[DETAIL_FIELD[outcome.status]]);
  });

  it("the retry decision reads the kept failures: a retryable one retries, one marked not retryable parks the delivery", () => {
    const now = new Date(0);
    const policy = { maxAttempts: 3, baseMs: 1000, maxMs: 10_000 };
    const kept = (handler: string, o: Outcome) => ({ handler, ...outcomeRecord(o) });
    expect(
      decideDelivery(
        [kept("a", { status: "done" }), kept("b", { status: "failed", error: "timeout" })],
        1,
        policy,
        now,
      ),
    ).toEqual({ status: "failed", retryAt: new Date(1000), lastError: "b: timeout" });
    expect(
      decideDelivery([kept("b", { status: "failed", error: "bad input", retryable: false })], 1, policy, now),
    ).toEqual({ status: "dead", lastError: "b: bad input" });
  });

  it("`steward deliveries show` names each detail by the field it came from", () => {
    const at = new Date("2030-01-01T00:00:00Z");
    const outcome = (handler: string, o: Outcome) => ({
      handler,
      ...outcomeRecord(o),
      attempts: 1,
      seconds: 0.5,
      updatedAt: at,
    });
    const text = formatShow(
      {
        delivery: {
          id: "d1",
          event: "issues",
          action: "opened",
          installationId: 1,
          repository: "acme/web",
          headers: {},
          payload: "{}",
          receivedAt: at,
          status: "dead",
          attempts: 1,
          nextRunAt: at,
          lastError: "c: boom",
          updatedAt: at,
        },
        outcomes: [
          outcome("a", { status: "done", summary: "ok" }),
          outcome("b", { status: "skipped", reason: "off" }),
          outcome("c", { status: "failed", error: "boom", retryable: false }),
        ],
      },
      false,
    );
    expect(text).toContain("summary: ok");
    expect(text).toContain("reason: off");
    expect(text).toMatch(/c +failed \(not retryable\).*error: boom/);
  });
});
