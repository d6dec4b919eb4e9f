// Pauses: an owner or operator holds work for one handler, one installation or everything.
// They live in the store's kv part (every backend, shared by replicas, kept across restarts);
// deliveries keep being recorded and answered 202 while paused, and the engine runs none of
// what a pause covers. Each change is written to the audit trail.
import type { Store } from "../store/types.js";

export type PauseScope =
  { kind: "all" } | { kind: "handler"; handler: string } | { kind: "installation"; installation: number };

export interface Pause {
  scope: PauseScope;
  /** Who paused: `cli` with the operator's user, or `console` with the GitHub login. */
  by: string;
  /** When (ISO time). */
  at: string;
}

const PREFIX = "steward/pause/";

export function pauseKey(scope: PauseScope): string {
  if (scope.kind === "all") return `${PREFIX}all`;
  if (scope.kind === "handler") return `${PREFIX}handler/${scope.handler}`;
  return `${PREFIX}installation/${scope.installation}`;
}

/** How a pause is named to people: `everything`, `handler rerun`, `installation 42`. */
export function describeScope(scope: PauseScope): string {
  if (scope.kind === "all") return "everything";
  if (scope.kind === "handler") return `handler ${scope.handler}`;
  return `installation ${scope.installation}`;
}

/** The scope `--handler H` / `--installation N` (or a form's fields) name; neither: everything. */
export function scopeOf(handler: string | undefined, installation: string | undefined): PauseScope {
  if (handler !== undefined && installation !== undefined)
    throw new Error("pause one handler or one installation, not both at once");
  if (handler !== undefined) {
    if (!/^[A-Za-z0-9_.-]{1,100}$/.test(handler)) throw new Error(`not a handler name: ${JSON.stringify(handler)}`);
    return { kind: "handler", handler };
  }
  if (installation !== undefined) {
    const n = Number(installation);
    if (!/^\d{1,15}$/.test(installation) || !Number.isSafeInteger(n) || n <= 0)
      throw new Error(`not an installation id: ${JSON.stringify(installation)}`);
    return { kind: "installation", installation: n };
  }
  return { kind: "all" };
}

/** Pause `scope`; false when it was paused already (the first pause's record stays). */
export async function pause(kv: Pick<Store, "claim" | "audit">, scope: PauseScope, by: string): Promise<boolean> {
  const record: Pause = { scope, by, at: new Date().toISOString() };
  const first = await kv.claim(pauseKey(scope), { value: record });
  if (first) await kv.audit({ kind: "pause", source: "steward", details: { scope: describeScope(scope), by } });
  return first;
}

/** Resume `scope`; false when it was not paused. */
export async function resume(
  kv: Pick<Store, "get" | "delete" | "audit">,
  scope: PauseScope,
  by: string,
): Promise<boolean> {
  const was = await kv.get(pauseKey(scope));
  if (was === undefined) return false;
  await kv.delete(pauseKey(scope));
  await kv.audit({ kind: "resume", source: "steward", details: { scope: describeScope(scope), by } });
  return true;
}

export async function listPauses(kv: Pick<Store, "list">): Promise<Pause[]> {
  return (await kv.list<Pause>(PREFIX)).map((e) => e.value);
}

/** What is paused now, as the engine asks it. */
export interface PauseState {
  readonly all: boolean;
  readonly handlers: ReadonlySet<string>;
  readonly installations: ReadonlySet<number>;
}

export const NOTHING_PAUSED: PauseState = { all: false, handlers: new Set(), installations: new Set() };

export function pauseState(pauses: readonly Pause[]): PauseState {
  const handlers = new Set<string>();
  const installations = new Set<number>();
  let all = false;
  for (const { scope } of pauses) {
    if (scope.kind === "all") all = true;
    else if (scope.kind === "handler") handlers.add(scope.handler);
    else installations.add(scope.installation);
  }
  return { all, handlers, installations };
}

/**
 * Whether work for `installation` going to `handlers` waits. A delivery that goes to a paused
 * handler waits whole, so its handlers still run together, in the order deliveries arrived.
 */
export function isHeld(state: PauseState, installation: number | undefined, handlers: readonly string[]): boolean {
  if (state.all) return true;
  if (installation !== undefined && state.installations.has(installation)) return true;
  return handlers.some((h) => state.handlers.has(h));
}

/** How long the engine trusts its last read of the pauses: a pause or resume on another replica takes effect within it. */
export const PAUSE_READ_MS = 1_000;

/** The engine's view of the pauses: read from the store at most once a `PAUSE_READ_MS`, shared by concurrent asks. */
export function pauseView(kv: Pick<Store, "list">, readMs = PAUSE_READ_MS) {
  let last: { state: PauseState; at: number } | undefined;
  let reading: Promise<PauseState> | undefined;
  return {
    current(): Promise<PauseState> {
      if (last && Date.now() - last.at < readMs) return Promise.resolve(last.state);
      // Trusted from when the read began: a pause written while it was under way is seen within readMs.
      const began = Date.now();
      reading ??= listPauses(kv)
        .then((pauses) => {
          last = { state: pauseState(pauses), at: began };
          return last.state;
        })
        .finally(() => (reading = undefined));
      return reading;
    },
    /** Forget the last read (this process just paused or resumed). */
    forget(): void {
      last = undefined;
    },
  };
}
export type PauseView = ReturnType<typeof pauseView>;
