import { describe, expect, it } from "vitest";
import { describeError, rateLimitWaitMs } from "../../../handlers/secrets/api.js";
import { FanOut, RateLimitPause } from "../../../handlers/secrets/limits.js";
import { expectStoppedWith } from "../../support/stopped.js";

/** The shape of an Octokit RequestError: status plus the response's headers and body. */
function apiError(status: number, headers: Record<string, string>, message = "limited") {
  return Object.assign(new Error(`${message} - https://docs.github.com/rest`), { status, response: { headers, data: { message } } });
}

describe("rateLimitWaitMs", () => {
  const date = "Sat, 21 Nov 2026 14:00:00 GMT";
  const now = Date.parse(date);
  it.each([
    ["secondary limit with Retry-After", apiError(403, { "retry-after": "7" }), 7_000],
    ["429 with Retry-After", apiError(429, { "retry-after": "0" }), 0],
    ["primary limit: until reset by the server's clock, plus a second", apiError(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(now / 1000 + 120), date }), 121_000],
    ["a 403 that is not a rate limit", apiError(403, { "x-ratelimit-remaining": "4000" }, "Resource not accessible by integration"), undefined],
    ["a 404", apiError(404, {}), undefined],
    ["not an API error", new Error("boom"), undefined],
  ])("%s", (_t, error, want) => expect(rateLimitWaitMs(error, now)).toBe(want));

  it("describes errors by status and API message only", () => {
    expect(describeError(apiError(422, {}, "Validation Failed"))).toBe("422 Validation Failed");
    expect(describeError(new Error("socket hang up - more"))).toBe("socket hang up");
  });
});

describe("FanOut", () => {
  it("bounds concurrency in a lane", async () => {
    const fan = new FanOut(`lane-concurrency-${Math.random()}`, { concurrency: 3 });
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        fan.run(async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 20));
          running--;
        }),
      ),
    );
    expect(peak).toBe(3);
  });

  it("waits out a short limit and retries the same job; a long one stops the run and refuses what has not started", async () => {
    const fan = new FanOut(`lane-limits-${Math.random()}`, { concurrency: 1, maxPauseMs: 1_000 });
    let calls = 0;
    const retried = await fan.run(async () => {
      calls++;
      if (calls === 1) throw apiError(403, { "retry-after": "0" });
      return "done";
    });
    expect([retried, calls, fan.pauses]).toEqual(["done", 2, 1]);

    const long = fan.run(async () => {
      throw apiError(403, { "retry-after": "3600" });
    });
    let later = 0;
    const next = fan.run(async () => void later++);
    await expect(long).rejects.toBeInstanceOf(RateLimitPause);
    await expect(next).rejects.toBeInstanceOf(RateLimitPause);
    expect(later).toBe(0);
    expect(fan.pausedUntil()!.getTime()).toBeGreaterThan(Date.now() + 3_500_000);
  });

  it("ends a pause at once when the run is stopped, without starting the job again", async () => {
    const stop = new AbortController();
    // A pause inside the budget (ten minutes): waited out in place, unless the run is stopped.
    const fan = new FanOut(`lane-stop-${Math.random()}`, { concurrency: 1, maxPauseMs: 20 * 60_000, signal: stop.signal });
    let calls = 0;
    const job = fan.run(async () => {
      calls++;
      throw apiError(403, { "retry-after": "600" });
    });
    while (fan.pauses === 0) await new Promise((r) => setTimeout(r, 5));
    stop.abort(new Error("sync cancelled"));
    await expectStoppedWith(job, "sync cancelled");
    expect(calls).toBe(1);
  });

  it("passes other errors through untouched", async () => {
    const fan = new FanOut(`lane-errors-${Math.random()}`);
    const error = apiError(500, {});
    await expect(fan.run(async () => Promise.reject(error))).rejects.toBe(error);
    expect(fan.pausedUntil()).toBeUndefined();
  });
});
