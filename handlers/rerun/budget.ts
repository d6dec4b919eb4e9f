// The per-repository daily re-run budget (`rerun.daily_budget`). Each re-run Steward requests takes
// one slot of the repository's UTC day; a slot is a store key, so the count survives restarts and is
// shared by replicas. Taking a slot happens right before the request, under a lock, so two decisions
// finishing together cannot both take the last slot.
import type { Store } from "../../src/index.js";
import { withStoreLock } from "../../src/index.js";
import { budgetDayPrefix, budgetLockKey } from "./keys.js";

/** Slots outlive their day a little so a count near midnight is still right. */
const SLOT_TTL_MS = 2 * 24 * 3_600_000;

export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

function dayPrefix(repoId: number, at: Date): string {
  return budgetDayPrefix(repoId, utcDay(at));
}

/**
 * Re-runs requested in the repository on `at`'s UTC day, counted against `budget`: without one
 * there is nothing to count against and nothing is read (the day's slots grow with every re-run;
 * under a budget there are at most that many).
 */
export async function usedToday(
  store: Store,
  repoId: number,
  budget: number | undefined,
  at = new Date(),
): Promise<number> {
  if (budget === undefined) return 0;
  return (await store.list(dayPrefix(repoId, at))).length;
}

/**
 * Take the slot `slot` (e.g. `run:attempt`) of today's budget: true when taken now or already held
 * (a retry of the same re-run), false when the budget is spent. No limit: always true, nothing kept
 * but the slot itself (so turning a budget on counts today's re-runs already made).
 */
export async function takeSlot(
  store: Store,
  repoId: number,
  slot: string,
  limit: number | undefined,
  at = new Date(),
): Promise<boolean> {
  const prefix = dayPrefix(repoId, at);
  // Nothing to count against: no lock and no listing of the day's slots, which grows with every
  // re-run of the day (a busy repository's thousandth re-run read a thousand slots).
  if (limit === undefined) {
    await store.set(prefix + slot, true, { ttlMs: SLOT_TTL_MS });
    return true;
  }
  return withStoreLock(store, budgetLockKey(repoId), async () => {
    const slots = await store.list(prefix);
    if (slots.some((e) => e.key === prefix + slot)) return true;
    if (limit !== undefined && slots.length >= limit) return false;
    await store.set(prefix + slot, true, { ttlMs: SLOT_TTL_MS });
    return true;
  });
}

/** Give the slot back: the API refused the re-run, so nothing was spent. */
export async function returnSlot(store: Store, repoId: number, slot: string, at = new Date()): Promise<void> {
  await store.delete(dayPrefix(repoId, at) + slot);
}
