// `ctx.once(key, effect)`: one side effect per key, across retries, redeliveries and replicas,
// without ever losing it. The effect is recorded as done only after it succeeded. Before it
// runs, an intent is written; a later attempt that finds the intent (the earlier one crashed,
// or its API call failed or lost its answer) asks `check` whether the effect landed anyway, and
// runs it again only when it did not. A lease keeps two workers from running it at once.
import type { OnceEffect, OnceResult } from "../handler.js";
import type { Store } from "../store/types.js";

/** How long one attempt may hold the key while running the effect (a crash frees it after this). */
const LEASE_TTL_MS = 15 * 60_000;
/** How long a done effect (and an unfinished intent) is remembered: longer than GitHub redelivers. */
const RECORD_TTL_MS = 30 * 24 * 3_600_000;

interface Done<T> {
  value: T;
  by: string;
}

/** Thrown (retryable) when another delivery or task is running the same effect right now. */
export class EffectInProgress extends Error {
  constructor(key: string, holder: string) {
    super(`effect "${key}" is being carried out by ${holder}; retrying later`);
  }
}

export function onceFor(store: Store, namespace: string, owner: string) {
  return async function once<T>(key: string, effect: OnceEffect<T>): Promise<OnceResult<T>> {
    const base = `once:${namespace}:${key}`;
    const recorded = await store.get<Done<T>>(`${base}:done`);
    if (recorded) return { state: "recorded", value: recorded.value };

    if (!(await store.claim(`${base}:lease`, { ttlMs: LEASE_TTL_MS, value: owner }))) {
      const holder = await store.get<string>(`${base}:lease`);
      // Our own lease is left over from an attempt of ours that died: carry on.
      if (holder !== owner) throw new EffectInProgress(key, holder ?? "another worker");
    }
    try {
      const again = await store.get<Done<T>>(`${base}:done`);
      if (again) return { state: "recorded", value: again.value };
      const done = async (value: T, state: "ran" | "found"): Promise<OnceResult<T>> => {
        await store.set(`${base}:done`, { value, by: owner } satisfies Done<T>, { ttlMs: RECORD_TTL_MS });
        await store.delete(`${base}:intent`);
        return { state, value };
      };
      if ((await store.get(`${base}:intent`)) !== undefined && effect.check) {
        const found = await effect.check();
        if (found !== undefined) return await done(found, "found");
      }
      await store.set(`${base}:intent`, { by: owner }, { ttlMs: RECORD_TTL_MS });
      // Thrown errors leave the intent: the next attempt checks before running again.
      return await done(await effect.run(), "ran");
    } finally {
      await store.release(`${base}:lease`);
    }
  };
}
