// What the policy says about existing targets Steward did not create (`adopt` on the document or on
// an entry; an entry's own wins): true adopts; false or unsaid leaves it alone as a conflict. Pure.
import type { SecretsPolicy } from "./policy.js";
import type { DesiredTarget } from "./targets.js";

export function adoptedKeys(policy: SecretsPolicy, desired: readonly DesiredTarget[]): Map<string, boolean> {
  const entryOf = (d: DesiredTarget) => {
    const entries = d.kind === "secret" ? policy.secrets : policy.variables;
    // Names are case-insensitive; desired targets carry them upper-cased.
    return Object.entries(entries ?? {}).find(([name]) => name.toUpperCase() === d.name)?.[1];
  };
  const out = new Map<string, boolean>();
  for (const d of desired) {
    const adopt = entryOf(d)?.adopt ?? policy.adopt;
    if (adopt !== undefined) out.set(d.key, adopt);
  }
  return out;
}
