// Bottleneck with its zero-delay yields replaced (src/api/bottleneck-yield.ts) still behaves as
// Bottleneck: order and concurrency, retries from "failed", dropping on stop, both bundles.
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { removeBottleneckYieldDelay } from "../../src/api/bottleneck-yield.js";

type Limiter = {
  schedule<T>(fn: () => Promise<T>): Promise<T>;
  on(event: "failed", fn: (error: unknown, info: { retryCount: number }) => number | void): void;
  stop(options: { dropWaitingJobs: boolean }): Promise<void>;
  running(): Promise<number>;
};
type LimiterClass = new (options?: Record<string, unknown>) => Limiter;

const require = createRequire(import.meta.url);
const bundles: [string, LimiterClass][] = [
  ["bottleneck/light", require("bottleneck/light.js") as LimiterClass],
  ["bottleneck", require("bottleneck") as LimiterClass],
];

describe("bottleneck without 1 ms yields", () => {
  it("recognises the installed Bottleneck's internals (else API calls silently keep the delay)", () => {
    expect(removeBottleneckYieldDelay()).toBe(true);
  });

  for (const [name, Bottleneck] of bundles) {
    describe(name, () => {
      it("runs jobs in order within maxConcurrent", async () => {
        removeBottleneckYieldDelay();
        const limiter = new Bottleneck({ maxConcurrent: 2 });
        let running = 0;
        let peak = 0;
        const order: number[] = [];
        const job = (i: number) => async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 5));
          order.push(i);
          running--;
          return i;
        };
        expect(await Promise.all([0, 1, 2, 3, 4].map((i) => limiter.schedule(job(i))))).toEqual([0, 1, 2, 3, 4]);
        expect(peak).toBeLessThanOrEqual(2);
        expect(order).toEqual([0, 1, 2, 3, 4]);
      });

      it("retries a failed job when the failed listener says so", async () => {
        removeBottleneckYieldDelay();
        const limiter = new Bottleneck();
        limiter.on("failed", (_error, info) => (info.retryCount < 2 ? 0 : undefined));
        let calls = 0;
        const result = limiter.schedule(async () => {
          calls++;
          if (calls < 3) throw new Error(`attempt ${calls}`);
          return "third time";
        });
        await expect(result).resolves.toBe("third time");
        expect(calls).toBe(3);
      });

      it("drops a job that stop() caught before it ran", async () => {
        removeBottleneckYieldDelay();
        const limiter = new Bottleneck({ maxConcurrent: 1 });
        let ran = 0;
        const first = limiter.schedule(async () => {
          ran++;
          await new Promise((r) => setTimeout(r, 20));
        });
        first.catch(() => undefined);
        const second = limiter.schedule(async () => void ran++);
        second.catch(() => undefined);
        await new Promise((r) => setImmediate(r));
        await limiter.stop({ dropWaitingJobs: true });
        await expect(second).rejects.toThrow(/stop/i);
        await first.catch(() => undefined);
        expect(ran).toBeLessThanOrEqual(1);
      });
    });
  }
});

describe("bottleneck without turns of the event loop", () => {
  for (const [name, Bottleneck] of bundles) {
    it(`${name}: a job with nothing to wait for starts before anything queued for the next turn`, async () => {
      removeBottleneckYieldDelay();
      // Two limiters in a row, as a write passes the write slot and then the throttling plugin's.
      const outer = new Bottleneck({ maxConcurrent: 1, minTime: 0 });
      const inner = new Bottleneck();
      const order: string[] = [];
      setImmediate(() => order.push("next turn"));
      const result = await outer.schedule(() => inner.schedule(async () => (order.push("job"), "done")));
      expect(result).toBe("done");
      expect(order).toEqual(["job"]);
      await new Promise((r) => setImmediate(r));
      expect(order).toEqual(["job", "next turn"]);
    });
  }
});
