// Impact simulation of a policy: each handler that simulates (`HandlerModule.simulate`) says, for
// its own section, what the policy would have decided on the facts it stored, against what it did.
// Shared by `steward simulate` and the steward/config check's impact section.
import type { HandlerModule } from "../handler.js";
import type { Store } from "../store/types.js";

/** The handlers whose decisions a simulation covers, in order. */
export function simulatedHandlers(handlers: readonly HandlerModule<any>[]): HandlerModule<any>[] {
  return handlers.filter((h) => h.simulate && h.policy);
}

/**
 * One clause per simulated section of `sections` (an effective policy: valid sections only), over
 * one repository's facts or every repository's; `only` narrows it to some section keys.
 */
export async function simulatePolicy(
  handlers: readonly HandlerModule<any>[],
  sections: Readonly<Record<string, unknown>>,
  opts: { store: Pick<Store, "list">; repository?: string | undefined; only?: ReadonlySet<string> },
): Promise<string[]> {
  const lines: string[] = [];
  for (const h of simulatedHandlers(handlers)) {
    const key = h.policy!.key;
    if (opts.only && !opts.only.has(key)) continue;
    if (!Object.hasOwn(sections, key) || sections[key] === undefined) continue;
    lines.push(
      await h.simulate!({
        policy: sections[key],
        store: opts.store,
        ...(opts.repository ? { repository: opts.repository } : {}),
      }),
    );
  }
  return lines;
}
