// One piece of work at a time per key, in order; a failure does not stop the next; keys are independent.
import { describe, expect, it } from "vitest";
import { createKeyedQueue, FIRST_IN_A_ROW } from "../../src/coordination/keyed-queue.js";

describe("createKeyedQueue", () => {
  it("runs a key's work one at a time in order, past failures, and never holds another key", async () => {
    const queue = createKeyedQueue();
    const log: string[] = [];
    let releaseA!: () => void;
    const a = queue.run("k", () =>
      new Promise<string>((r) => (releaseA = () => r("a"))).then((v) => (log.push("a done"), v)),
    );
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

  it("starts work asked `first` ahead of other queued work of its key, each kind in order, and never starves the others", async () => {
    const queue = createKeyedQueue();
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const work = (name: string) => async () => {
      started.push(name);
      if (name === "running") await gate;
      return name;
    };
    const all = [queue.run("k", work("running"))];
    for (const n of [1, 2, 3]) all.push(queue.run("k", work(`report ${n}`)));
    for (let n = 1; n <= FIRST_IN_A_ROW + 2; n++) all.push(queue.run("k", work(`answer ${n}`), { first: true }));
    // Another key is never held by this one's queue.
    expect(await queue.run("other", work("other"), { first: true })).toBe("other");
    release();
    await Promise.all(all);
    expect(started).toEqual([
      "running",
      "other",
      ...Array.from({ length: FIRST_IN_A_ROW }, (_, i) => `answer ${i + 1}`),
      "report 1",
      `answer ${FIRST_IN_A_ROW + 1}`,
      `answer ${FIRST_IN_A_ROW + 2}`,
      "report 2",
      "report 3",
    ]);
  });

  it("a work function that throws before returning its promise rejects its own turn only", async () => {
    const queue = createKeyedQueue();
    const bad = queue.run("k", () => {
      throw new Error("sync throw");
    });
    await expect(bad).rejects.toThrow("sync throw");
    expect(await queue.run("k", async () => "next")).toBe("next");
  });
});
