// "At most one decision per run attempt", across redeliveries, duplicate deliveries and replicas.
// The claim is short while deciding (a crashed worker must not block the attempt for a month) and
// long once decided (GitHub redelivers for days).
import type { Store } from "../../src/index.js";

/** Held while a delivery decides; a crash leaves it to expire. */
export const DECIDING_TTL_MS = 15 * 60_000;
/** Kept once decided, longer than any redelivery. */
export const DECIDED_TTL_MS = 30 * 24 * 3_600_000;

interface ClaimValue {
  state: "deciding" | "decided";
  deliveryId: string;
  outcome?: string;
}

export function idempotencyKey(repoId: number, runId: number, attempt: number): string {
  return `rerun:${repoId}:${runId}:${attempt}`;
}

/**
 * Claim the right to decide. True for the first delivery, and for the same delivery coming back
 * after its worker died mid-decision. The engine leases a delivery to one worker at a time, so a
 * "deciding" claim held by this very delivery id can only be left over from a dead worker. (The
 * handler's attempt number cannot tell: a worker killed mid-handler never recorded an outcome, so
 * the resumed run is attempt 1 again.) Carrying out re-checks the run's attempt on the API, so a
 * re-run that was requested just before the crash is not requested twice.
 */
export async function claimDecision(store: Store, key: string, deliveryId: string): Promise<boolean> {
  const value: ClaimValue = { state: "deciding", deliveryId };
  if (await store.claim(key, { ttlMs: DECIDING_TTL_MS, value })) return true;
  const held = await store.get<ClaimValue>(key);
  if (held?.state === "deciding" && held.deliveryId === deliveryId) {
    await store.set(key, value, { ttlMs: DECIDING_TTL_MS });
    return true;
  }
  return false;
}

export async function recordDecision(store: Store, key: string, deliveryId: string, outcome: string): Promise<void> {
  const value: ClaimValue = { state: "decided", deliveryId, outcome };
  await store.set(key, value, { ttlMs: DECIDED_TTL_MS });
}
