// The effective policy from the org file (admin repository) and the repository file:
// both validated on their own, merged (org under repository, defaults under both), then
// each section's semantic check run again on the merged value, since a merge can create a
// conflict neither file has alone. Used by the loader and the `steward/config` check alike.
import type { HandlerModule } from "../handler.js";
import { isPlainObject, mergePolicy, policySections } from "./merge.js";
import type { LoadedPolicy, Problem } from "./types.js";
import { analysePolicyText, checkOptions, runCheck, type PolicyAnalysis } from "./validate.js";

export interface PolicySource {
  /** Name in problems and `sources`, e.g. `acme/.github:.github/steward.yml`. */
  file: string;
  /** The file's text; undefined when the file does not exist. */
  text: string | undefined;
}

export interface ResolvedPolicy extends LoadedPolicy {
  /** Per-file analyses, keyed by file name (only files that exist). */
  analyses: Map<string, PolicyAnalysis>;
}

/** Effective steward.yml: `org` merged under `repo`, each section's defaults under both. */
export function resolvePolicy(
  files: { org?: PolicySource; repo?: PolicySource },
  handlers: readonly HandlerModule<any>[],
  /** `resolveSources: false` for untrusted text (a fork's pull request): see `ValidateOptions`. */
  opts: { resolveSources?: boolean } = {},
): ResolvedPolicy {
  const present = [files.org, files.repo].filter((f): f is PolicySource & { text: string } => f?.text !== undefined);
  const analyses = new Map<string, PolicyAnalysis>();
  const problems: Problem[] = [];
  for (const f of present) {
    const a = analysePolicyText(f.text, {
      file: f.file,
      handlers,
      ...(opts.resolveSources === false ? { resolveSources: false } : {}),
    });
    analyses.set(f.file, a);
    problems.push(...a.problems);
  }
  const ordered = present.map((f) => ({ file: f.file, analysis: analyses.get(f.file)! }));
  const seen = new Set(problems.map(problemId));
  const sections: Record<string, unknown> = {};
  const given: string[] = [];
  for (const section of policySections(handlers)) {
    if (ordered.some((o) => o.analysis.invalid.has(section.key) || o.analysis.invalid.has("*"))) continue;
    let merged: unknown = undefined;
    for (const o of ordered) {
      const v = isPlainObject(o.analysis.value) ? o.analysis.value[section.key] : undefined;
      if (v !== undefined && v !== null) merged = mergePolicy(merged, v);
    }
    if (merged !== undefined) given.push(section.key);
    const value = mergePolicy(section.defaults, merged);
    let errors = 0;
    if (ordered.length > 1 || merged === undefined) {
      // One file alone was already checked by its analysis; a merge (or defaults alone) may differ.
      for (const finding of runCheck(
        { key: section.key, prefix: [section.key], check: section.check },
        value,
        checkOptions(opts),
      )) {
        const p = placeFinding(finding, section.key, ordered);
        if (finding.severity === "error") errors++;
        if (seen.has(problemId(p))) continue;
        seen.add(problemId(p));
        problems.push(p);
      }
    }
    if (errors === 0) sections[section.key] = value;
  }
  return { sections, problems, sources: present.map((f) => f.file), given, analyses };
}

/** The repository file when it holds the path (it won the merge there), else the org file, else the section key. */
function placeFinding(
  finding: { path: (string | number)[]; message: string; severity: "error" | "warning" },
  key: string,
  ordered: { file: string; analysis: PolicyAnalysis }[],
): Problem {
  const fromLast = [...ordered].reverse();
  for (const want of [finding.path, [key]]) {
    for (const o of fromLast) {
      const pos = o.analysis.locate(want);
      if (pos.exact)
        return {
          file: o.file,
          line: pos.line,
          column: pos.column,
          message: finding.message,
          path: finding.path,
          severity: finding.severity,
        };
    }
  }
  const file = fromLast[0]?.file ?? "(defaults)";
  return { file, line: 1, column: 1, message: finding.message, path: finding.path, severity: finding.severity };
}

function problemId(p: Problem): string {
  return JSON.stringify([p.file, p.line, p.column, p.message]);
}
