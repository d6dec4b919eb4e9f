// Decides whether a handler may run on a repository's policy: never on an invalid section.
import type { LoadedPolicy, Problem } from "../policy/types.js";

export type PolicyGate<P> = { run: true; policy: P | undefined } | { run: false; reason: string };

export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.message}`;
}

/**
 * The section is present (validated, defaults applied): run with it. Absent because of errors:
 * skip, naming the first error of that section (or of the file, when it did not parse at all).
 * Absent without errors: run without a policy.
 */
export function gatePolicy<P>(key: string, loaded: LoadedPolicy): PolicyGate<P> {
  if (Object.prototype.hasOwnProperty.call(loaded.sections, key) && loaded.sections[key] !== undefined) {
    return { run: true, policy: loaded.sections[key] as P };
  }
  const errors = loaded.problems.filter((p) => p.severity === "error");
  const first = errors.find((p) => p.path[0] === key) ?? errors[0];
  if (!first) return { run: true, policy: undefined };
  return { run: false, reason: `invalid policy: ${formatProblem(first)}` };
}
