import { describe, expect, it } from "vitest";
import { rateLimitWaitMs } from "../../../src/api/rate-limit.js";
import { describeError } from "../../../handlers/secrets/api.js";
import { FanOut, RateLimitPause } from "../../../handlers/secrets/limits.js";
import { expectStoppedWith } from "../../support/stopped.js";

/** The shape of an Octokit RequestError: status plus the response's headers and body. */
function apiError(status: number, headers: Record<string, string>, message = "limited") {
  return Object.assign(new Error(`${message} - https://docs.github.com/rest`), {
    status,
    response: { headers, data: { message } },
  });
}

describe("rateLimitWaitMs", () => {
  const date = "Sat, 21 Nov 2026 14:00:00 GMT";
  const now = Date.parse(date);
  it.each([
    ["secondary limit with Retry-After", apiError(403, { "retry-after": "7" }), 7_000],
    ["429 with Retry-After", apiError(429, { "retry-after": "0" }), 0],
    [
      "primary limit: until reset by the server's clock, plus a second",
      apiError(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(now / 1000 + 120), date }),
      121_000,
    ],
    [
      "a 403 that is not a rate limit",
      apiError(403, { "x-ratelimit-remaining": "4000" }, "Resource not accessible by integration"),
      undefined,
    ],
    ["a 404", apiError(404, {}), undefined],
    ["not an API error", new Error("boom"), undefined],
  ])("%s", (_t, error, want) => expect(rateLimitWaitMs(error, now)).toBe(want));

  it("describes errors by status and API message only", () => {
    expect(describeError(apiError(422, {}, "Validation Failed"))).toBe("422 Validation Failed");
    expect(describeError(new Error("socket hang up - more"))).toBe("socket hang up");
  });
});

describe("FanOut", () => {
  it("bounds the run's concurrency", async () => {
    const fan = new FanOut({ concurrency: 3 });
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

  it("a rate limit the client gave up on stops the run and refuses what has not started", async () => {
    const fan = new FanOut({ concurrency: 1 });
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

  it("starts no job once the run was stopped", async () => {
    const stop = new AbortController();
    const fan = new FanOut({ concurrency: 1, signal: stop.signal });
    let calls = 0;
    stop.abort(new Error("sync cancelled"));
    await expectStoppedWith(
      fan.run(async () => void calls++),
      "sync cancelled",
    );
    expect(calls).toBe(0);
  });

  it("passes other errors through untouched", async () => {
    const fan = new FanOut();
    const error = apiError(500, {});
    await expect(fan.run(async () => Promise.reject(error))).rejects.toBe(error);
    expect(fan.pausedUntil()).toBeUndefined();
  });
});
