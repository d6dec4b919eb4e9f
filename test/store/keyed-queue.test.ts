// One piece of work at a time per key, in order; a failure does not stop the next; keys are independent.
import { describe, expect, it } from "vitest";
import { createKeyedQueue } from "../../src/store/keyed-queue.js";

describe("createKeyedQueue", () => {
  it("runs a key's work one at a time in order, past failures, and never holds another key", async () => {
    const queue = createKeyedQueue();
    const log: string[] = [];
    let releaseA!: () => void;
    const a = queue.run("k", () => new Promise<string>((r) => (releaseA = () => r("a"))).then((v) => (log.push("a done"), v)));
    const b = queue.run("k", async () => {
      log.push("b start");
      throw new Error("b failed");
    });
    const c = queue.run("k", async () => (log.push("c start"), "c"));
    expect(await queue.run("other", async () => "other")).toBe("other");
    expect(log).toEqual([]);
    releaseA();
    expect(await a).toBe("a");
    await expect(b).rejects.toThrow("b failed");
    expect(await c).toBe("c");
    expect(log).toEqual(["a done", "b start", "c start"]);
  });
});
