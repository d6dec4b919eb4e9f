// The write slot of an installation shared through Redis: a write that lasts longer than the
// lease keeps the slot (its holder renews it), the next write waits the interval after the
// previous one was answered, and a holder that vanished mid-write (its connection gone for
// good, as after kill -9) frees the slot once its lease lapses.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Redis } from "ioredis";
import { RedisWriteSlots, slotKey, WRITE_SLOT_TTL_MS } from "../../src/coordination/redis/write-slots.js";
import { dropPrefix, redisUp, redisUrl, uniquePrefix } from "./support.js";
import { expectStoppedWith } from "../support/stopped.js";

const clients: Redis[] = [];
const prefixes: string[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  for (const p of prefixes.splice(0)) await dropPrefix(p);
});

function setUp(): { prefix: string; client(): Redis } {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  return {
    prefix,
    client() {
      const c = new Redis(redisUrl);
      clients.push(c);
      return c;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const INTERVAL = 300;

describe.skipIf(!redisUp)("write slots in Redis", () => {
  it("a write longer than the lease keeps the slot; the next waits the interval after its answer", async () => {
    const { prefix, client } = setUp();
    const a = new RedisWriteSlots(client(), prefix, "replica-a");
    const b = new RedisWriteSlots(client(), prefix, "replica-b");
    let answeredAt = 0;
    const slow = a.run(
      "7",
      async () => {
        await sleep(WRITE_SLOT_TTL_MS + 1_500);
        answeredAt = Date.now();
      },
      { gapMs: INTERVAL },
    );
    // A holds the slot before B asks (a fixed sleep lets B win the race on a loaded machine).
    await vi.waitFor(() => expect(a.held()).toEqual(["7"]), { timeout: 30_000, interval: 10 });
    let startedAt = 0;
    await b.run(
      "7",
      async () => {
        startedAt = Date.now();
      },
      { gapMs: INTERVAL },
    );
    await slow;
    expect(answeredAt).toBeGreaterThan(0);
    // Redis and this process read the same clock, in whole milliseconds.
    expect(startedAt - answeredAt).toBeGreaterThanOrEqual(INTERVAL - 2);
    expect(a.held()).toEqual([]);
  }, 90_000);

  it("writes of one process go one at a time, in order", async () => {
    const { prefix, client } = setUp();
    const slots = new RedisWriteSlots(client(), prefix, "replica-a");
    const order: number[] = [];
    let running = 0;
    let most = 0;
    await Promise.all(
      [1, 2, 3, 4].map((n) =>
        slots.run(
          "7",
          async () => {
            most = Math.max(most, ++running);
            order.push(n);
            await sleep(10);
            running--;
          },
          { gapMs: 50 },
        ),
      ),
    );
    expect(order).toEqual([1, 2, 3, 4]);
    expect(most).toBe(1);
  });

  it("a holder gone mid-write frees the slot when its lease lapses", async () => {
    const { prefix, client } = setUp();
    const dying = client();
    const dead = new RedisWriteSlots(dying, prefix, "dead-replica");
    const survivor = new RedisWriteSlots(client(), prefix, "survivor");
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    // The dead one's write never ends and its connection is gone: no renewal, no release.
    void dead.run(
      "7",
      async () => {
        dying.disconnect();
        entered();
        await new Promise(() => undefined);
      },
      { gapMs: INTERVAL },
    );
    await inside;
    expect((await client().hget(slotKey(prefix, "7"), "holder"))?.startsWith("dead-replica#")).toBe(true);
    const before = Date.now();
    let wrote = false;
    await survivor.run(
      "7",
      async () => {
        wrote = true;
      },
      { gapMs: INTERVAL },
    );
    expect(wrote).toBe(true);
    // Not before the dead holder's lease could lapse.
    expect(Date.now() - before).toBeGreaterThanOrEqual(WRITE_SLOT_TTL_MS - 1_100);
  });

  it("a write asked `first` goes ahead of this process's queued writes of the installation", async () => {
    const { prefix, client } = setUp();
    const slots = new RedisWriteSlots(client(), prefix, "replica-a");
    const order: string[] = [];
    const write = (name: string) => async () => void order.push(name);
    const all = [
      slots.run("9", write("report 1"), { gapMs: 50 }),
      slots.run("9", write("report 2"), { gapMs: 50 }),
      slots.run("9", write("report 3"), { gapMs: 50 }),
      slots.run("9", write("re-run"), { gapMs: 50, first: true }),
    ];
    await Promise.all(all);
    expect(order).toEqual(["report 1", "re-run", "report 2", "report 3"]);
  });

  it("a stopped write gives up its place while it waits for the slot, and takes no turn", async () => {
    const { prefix, client } = setUp();
    // Ten minutes between writes: a write that waited out its turn would never finish here.
    const a = new RedisWriteSlots(client(), prefix, "replica-a");
    const b = new RedisWriteSlots(client(), prefix, "replica-b");
    const sent: string[] = [];
    await a.run("7", async () => sent.push("a"), { gapMs: 600_000 });
    const work = new AbortController();
    const waiting = b.run("7", async () => sent.push("b"), { gapMs: 600_000, stops: [work.signal] });
    await sleep(50);
    work.abort(new Error("delivery cancelled"));
    await expectStoppedWith(waiting, "delivery cancelled");
    await expect(b.run("7", async () => sent.push("c"), { gapMs: 600_000, stops: [work.signal] })).rejects.toThrow(
      /stopped/,
    );
    expect(sent).toEqual(["a"]);
    expect(b.held()).toEqual([]);
  });
});
