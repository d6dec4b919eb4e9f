// Decides whether a handler may run on a repository's policy: never on an invalid section.
import type { LoadedPolicy, PolicySection, Problem } from "../policy/types.js";

export type PolicyGate<P> = { run: true; policy: P | undefined } | { run: false; reason: string };

export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.message}`;
}

/**
 * Invalid section: skip, naming its first error (or the file's, when it did not parse at all).
 * Section not set by any policy file: skip, unless the handler is `enabledByDefault` (then run
 * with its defaults). Otherwise run with the validated section, defaults applied.
 */
export function gatePolicy<P>(
  section: Pick<PolicySection<P>, "key" | "enabledByDefault">,
  loaded: LoadedPolicy,
): PolicyGate<P> {
  const { key } = section;
  if (Object.prototype.hasOwnProperty.call(loaded.sections, key) && loaded.sections[key] !== undefined) {
    if (!loaded.given.includes(key) && section.enabledByDefault !== true) {
      return {
        run: false,
        reason: `no "${key}" section in ${loaded.sources.length > 0 ? loaded.sources.join(", ") : "any .github/steward.yml"}; the handler is off where it is not configured`,
      };
    }
    return { run: true, policy: loaded.sections[key] as P };
  }
  const errors = loaded.problems.filter((p) => p.severity === "error");
  const first = errors.find((p) => p.path[0] === key) ?? errors[0];
  if (!first) return { run: true, policy: undefined };
  return { run: false, reason: `invalid policy: ${formatProblem(first)}` };
}
