// The process-local limiters every API request passes through (local-limiters.ts): the retry
// loop the throttling plugin drives with its "failed" handler, and the per-installation cap on
// requests in flight. Jobs here are promises settled by the test, so each step is observed as it
// happens rather than timed.
import { describe, expect, it } from "vitest";
import { createConcurrencyGroup, createRetryLimiter } from "../../src/api/local-limiters.js";
import { runWithSignal } from "../../src/lifecycle/abort-scope.js";
import { expectStoppedWith } from "../support/stopped.js";

/** A job the test finishes by hand, recording when it started. */
function manual(started: string[], name: string) {
  let finish!: (v: string) => void;
  let fail!: (e: Error) => void;
  const done = new Promise<string>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return { run: () => (started.push(name), done), finish: () => finish(name), fail: (e: Error) => fail(e) };
}

const turn = () => new Promise((r) => setImmediate(r));

describe("createConcurrencyGroup", () => {
  it("runs at most the cap of one key at once, the rest in order as slots free; other keys are not held", async () => {
    const group = createConcurrencyGroup(3);
    const started: string[] = [];
    const jobs = Array.from({ length: 7 }, (_, i) => manual(started, `a${i}`));
    const results = jobs.map((j) => group.key("a").schedule({}, j.run));
    const other = manual(started, "b0");
    const otherResult = group.key("b").schedule(other.run);
    await turn();
    expect(started).toEqual(["a0", "a1", "a2", "b0"]);
    jobs[1]!.finish();
    await turn();
    expect(started).toEqual(["a0", "a1", "a2", "b0", "a3"]);
    for (const j of jobs) j.finish();
    other.finish();
    expect(await Promise.all(results)).toEqual(jobs.map((_, i) => `a${i}`));
    expect(await otherResult).toBe("b0");
    expect(started.filter((s) => s.startsWith("a"))).toEqual(jobs.map((_, i) => `a${i}`));
  });

  it("puts a retry (priority 0) ahead of waiting jobs and lets one of weight 0 run without a slot", async () => {
    const group = createConcurrencyGroup(1);
    const started: string[] = [];
    const first = manual(started, "first");
    const waiting = manual(started, "waiting");
    const retried = manual(started, "retried");
    const free = manual(started, "free");
    const all = [group.key("k").schedule({}, first.run), group.key("k").schedule({}, waiting.run), group.key("k").schedule({ priority: 0 }, retried.run), group.key("k").schedule({ priority: 0, weight: 0 }, free.run)];
    await turn();
    expect(started).toEqual(["first", "free"]);
    first.finish();
    await turn();
    expect(started).toEqual(["first", "free", "retried"]);
    retried.finish();
    await turn();
    expect(started).toEqual(["first", "free", "retried", "waiting"]);
    waiting.finish();
    free.finish();
    await Promise.all(all);
  });

  it("frees the slot of a job that fails or throws, and passes the arguments and the failure on", async () => {
    const group = createConcurrencyGroup(1);
    const limiter = group.key("k");
    const failing = limiter.schedule({}, async (x: number) => {
      throw new Error(`refused ${x}`);
    }, 7);
    const throwing = limiter.schedule({}, () => {
      throw new Error("thrown");
    });
    const after = limiter.schedule({}, async (a: string, b: string) => a + b, "o", "k");
    await expect(failing).rejects.toThrow("refused 7");
    await expect(throwing).rejects.toThrow("thrown");
    expect(await after).toBe("ok");
    // Idle again: a new job starts at once.
    const started: string[] = [];
    const next = manual(started, "next");
    const result = limiter.schedule({}, next.run);
    await turn();
    expect(started).toEqual(["next"]);
    next.finish();
    await result;
  });
});

describe("createRetryLimiter", () => {
  it("runs a failed job again after the wait its handler asks for, counting the retries, with the same arguments", async () => {
    const limiter = createRetryLimiter();
    const seen: { retryCount: number; args: unknown[] }[] = [];
    limiter.on("failed", (_error: unknown, info: { retryCount: number; args: unknown[] }) => {
      seen.push({ retryCount: info.retryCount, args: info.args });
      return info.retryCount < 2 ? 5 : undefined;
    });
    let calls = 0;
    const job = async (a: string, b: number) => {
      calls += 1;
      if (calls < 3) throw new Error(`try ${calls}`);
      return `${a}${b}`;
    };
    expect(await limiter.schedule(job, "x", 1)).toBe("x1");
    expect(calls).toBe(3);
    expect(seen).toEqual([
      { retryCount: 0, args: ["x", 1] },
      { retryCount: 1, args: ["x", 1] },
    ]);
  });

  it("fails with the job's own error when the handler asks for nothing, or throws", async () => {
    const quiet = createRetryLimiter().on("failed", () => undefined);
    await expect(quiet.schedule(async () => Promise.reject(new Error("no retry")))).rejects.toThrow("no retry");
    const broken = createRetryLimiter().on("failed", async () => {
      throw new Error("handler broke");
    });
    await expect(broken.schedule(async () => Promise.reject(new Error("the job's")))).rejects.toThrow("the job's");
    // Without a handler at all, as before one is attached.
    await expect(createRetryLimiter().schedule(async () => Promise.reject(new Error("bare")))).rejects.toThrow("bare");
  });

  it("gives up a wait when the client's hard stop fires, with the stop's reason, and does not run the job again", async () => {
    const stop = new AbortController();
    const limiter = createRetryLimiter(stop.signal).on("failed", () => 10 * 60_000);
    let calls = 0;
    const result = limiter.schedule(async () => {
      calls += 1;
      throw new Error("rate limited");
    });
    await turn();
    stop.abort(new Error("stopping"));
    await expectStoppedWith(result, "stopping");
    expect(calls).toBe(1);
    // Already stopped: a failure is not waited on at all.
    await expect(limiter.schedule(async () => Promise.reject(new Error("again")))).rejects.toThrow("stopping");
  });

  it("gives up a wait when the work that asked is told to stop, and leaves other work's requests waiting", async () => {
    const limiter = createRetryLimiter().on("failed", (_e: unknown, info: { retryCount: number }) => (info.retryCount === 0 ? 200 : undefined));
    const work = new AbortController();
    let stoppedCalls = 0;
    let otherCalls = 0;
    const stopped = runWithSignal(work.signal, () =>
      limiter.schedule(async () => {
        stoppedCalls += 1;
        throw new Error("rate limited");
      }),
    );
    const other = runWithSignal(new AbortController().signal, () =>
      limiter.schedule(async () => {
        otherCalls += 1;
        if (otherCalls === 1) throw new Error("rate limited");
        return "sent after its wait";
      }),
    );
    await turn();
    work.abort(new Error("delivery cancelled"));
    await expectStoppedWith(stopped, "delivery cancelled");
    expect(stoppedCalls).toBe(1);
    expect(await other).toBe("sent after its wait");
    expect(otherCalls).toBe(2);
  });
});
