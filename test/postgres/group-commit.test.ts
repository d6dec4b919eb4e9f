// The PostgreSQL intake's group commit: deliveries recorded together go in one INSERT, each
// answered after that commit with its own answer (a duplicate id, even within the batch, is a
// duplicate; a delivery the server refuses rejects alone), and the other replicas are woken by
// a notice sent in the same transaction. A run's outcomes asked for with its finish are
// written with it, under its lease, and a claim asked for meanwhile goes in the same statement.
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deliveryOf, examplePayload } from "../engine/helpers.js";
import { postgresStores, postgresUp, withClient } from "./support.js";

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const d of disposers.splice(0)) await d();
});

async function deployment() {
  const stores = postgresStores();
  disposers.push(() => stores.dispose());
  return stores;
}

const push = () => deliveryOf("push", examplePayload("push"));

describe.skipIf(!postgresUp)("recording deliveries on PostgreSQL", () => {
  it("records deliveries asked for together, each once, a repeated id a duplicate even within the batch", async () => {
    const stores = await deployment();
    const store = await stores.open();
    const before = push();
    expect(await store.deliveries.record(before)).toBe("recorded");
    const fresh = Array.from({ length: 30 }, push);
    const again = { ...fresh[3]!, receivedAt: new Date() };
    const answers = await Promise.all([...fresh, again, before].map((d) => store.deliveries.record(d)));
    expect(answers).toEqual([...fresh.map(() => "recorded"), "duplicate", "duplicate"]);
    expect(await store.deliveries.depth()).toBe(31);
    for (const d of fresh) expect((await store.deliveries.getDelivery(d.id))?.delivery.id).toBe(d.id);
  });

  it("a delivery the server refuses fails alone; the others of its batch are recorded", async () => {
    const stores = await deployment();
    const store = await stores.open();
    const good = Array.from({ length: 5 }, push);
    // PostgreSQL's text holds no NUL character: the server refuses this row.
    const bad = { ...push(), payload: '{"a":"\u0000"}' };
    const answers = await Promise.allSettled(
      [...good.slice(0, 2), bad, ...good.slice(2)].map((d) => store.deliveries.record(d)),
    );
    expect(answers.map((a) => a.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
      "fulfilled",
    ]);
    expect(await store.deliveries.depth()).toBe(5);
    expect(await store.deliveries.getDelivery(bad.id)).toBeUndefined();
  });

  it("a run's outcomes asked for with its finish go under its lease: none saved once the lease was taken back", async () => {
    const stores = await deployment();
    const store = await stores.open();
    const d = push();
    await store.deliveries.record(d);
    const lapsed = (await store.deliveries.claimDelivery(0))!;
    const current = (await store.deliveries.claimDelivery(60_000))!;
    const run = (token: string, summary: string) => {
      const outcomes = ["a", "b"].map((h) =>
        store.deliveries.recordOutcome(token, d.id, h, { status: "done", summary }, 0.1),
      );
      return Promise.all([...outcomes, store.deliveries.finishDelivery(token, d.id, { status: "done" })]);
    };
    expect(await run(lapsed.token, "late")).toEqual([false, false, false]);
    expect((await store.deliveries.getDelivery(d.id))?.outcomes).toEqual([]);
    expect(await run(current.token, "ok")).toEqual([true, true, true]);
    const shown = await store.deliveries.getDelivery(d.id);
    expect(shown?.delivery.status).toBe("done");
    expect(shown?.outcomes.map((o) => [o.handler, o.detail, o.attempts])).toEqual([
      ["a", "ok", 1],
      ["b", "ok", 1],
    ]);
    expect(shown?.attempts.map((a) => [a.handler, a.attempt])).toEqual([
      ["a", 1],
      ["b", 1],
    ]);
  });

  it("a claim asked for in the turn runs finish goes with their finishes: what they end is not claimed again", async () => {
    const stores = await deployment();
    const store = await stores.open();
    const ds = Array.from({ length: 4 }, push);
    for (const d of ds) await store.deliveries.record(d);
    const [done, failed] = await store.deliveries.claimDeliveries(60_000, 2);
    const ended = [done!.delivery.id, failed!.delivery.id];
    const statements = vi.spyOn(pg.Pool.prototype, "query");
    // The failed one is due again at once: the statement's own snapshot would still see it due.
    const [finishedDone, finishedFailed, claimed] = await Promise.all([
      store.deliveries.finishDelivery(done!.token, done!.delivery.id, { status: "done" }),
      store.deliveries.finishDelivery(failed!.token, failed!.delivery.id, {
        status: "failed",
        lastError: "boom",
        retryAt: new Date(Date.now() - 1_000),
      }),
      store.deliveries.claimDeliveries(60_000, 5),
    ]);
    expect(statements).toHaveBeenCalledTimes(1);
    statements.mockRestore();
    expect([finishedDone, finishedFailed]).toEqual([true, true]);
    // Recorded in the same millisecond, deliveries are claimed in id order: compared as sets.
    expect(claimed.map((c) => [c.delivery.id, c.delivery.attempts]).sort()).toEqual(
      ds
        .filter((d) => !ended.includes(d.id))
        .map((d) => [d.id, 1])
        .sort(),
    );
    expect((await store.deliveries.getDelivery(done!.delivery.id))?.delivery.status).toBe("done");
    const again = await store.deliveries.claimDeliveries(60_000, 5);
    expect(again.map((c) => [c.delivery.id, c.delivery.attempts])).toEqual([[failed!.delivery.id, 2]]);
  });

  it("wakes the other replicas of the deployment, not itself", async () => {
    const stores = await deployment();
    const recorder = await stores.open();
    const other = await stores.open();
    const woken = { recorder: 0, other: 0 };
    recorder.onWork(() => woken.recorder++);
    other.onWork(() => woken.other++);
    // Both listening before the delivery: a notice sent earlier would reach no one.
    await vi.waitFor(async () => expect(await listening(stores.schema)).toBe(2), { timeout: 30_000, interval: 100 });
    // A delivery recorded done is no work: no notice.
    await recorder.deliveries.record({ ...push(), settled: true });
    const awake = { ...woken };
    await recorder.deliveries.record(push());
    await vi.waitFor(() => expect(woken.other).toBeGreaterThan(awake.other), { timeout: 30_000, interval: 20 });
    expect(woken.recorder).toBe(awake.recorder);
  });
});

/** Connections listening on the deployment's wake-up channel. */
async function listening(schema: string): Promise<number> {
  return withClient(async (c) => {
    const { rows } = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'steward-wake' AND query LIKE $1`,
      [`%LISTEN%steward_work:${schema}%`],
    );
    return rows[0]!.n;
  });
}
