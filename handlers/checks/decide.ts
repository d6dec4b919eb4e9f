// The verdict of the steward/config check from file texts alone: each changed policy file
// validated exactly as the loader would load it (same schemas, same merge over the org file),
// its effective policy, and what changed compared with the base. Pure: no I/O.
import type { HandlerModule, Problem } from "../../src/index.js";
import {
  mergePolicy,
  policyDocuments,
  policySections,
  isDocumentPath,
  resolvePolicy,
  type PolicySource,
  validatePolicyText,
} from "../../src/policy/index.js";
import { diffValues, type ValueChange } from "./diff.js";

/** A policy file a pull request touches. */
export interface PolicyChange {
  path: string;
  /** `removed` also covers a policy file renamed away. */
  change: "added" | "modified" | "removed";
}

export interface FileVersions extends PolicyChange {
  /** Text at the head commit; undefined when the pull request removes it. */
  head: string | undefined;
  /** Text at the base; undefined when the pull request adds it. */
  base: string | undefined;
}

export interface EvaluateInput {
  files: FileVersions[];
  /** The org file (admin repository, default branch) when this is not the admin repository. */
  org?: PolicySource;
  handlers: readonly HandlerModule<any>[];
  /**
   * false when the files come from a fork: they are validated for structure only and nothing on
   * Steward's host is consulted (e.g. whether a secrets.yml `env:` / `file:` source exists), so
   * the report depends on the texts alone. Default true.
   */
  resolveSources?: boolean;
}

export interface FileReport extends FileVersions {
  kind: "policy" | "document";
  /** Problems found in this file at the head commit. */
  problems: Problem[];
  /** Effective value per section (policy) or the document with defaults; undefined parts have errors or were removed. */
  effective: Record<string, unknown> | undefined;
  /** Sections (policy) left out of the effective policy because of errors. */
  broken: string[];
  changes: ValueChange[];
}

export interface Evaluation {
  files: FileReport[];
  /** Problems in files this pull request does not change (the org file): shown, not blamed on it. */
  elsewhere: Problem[];
  /** Errors in the changed files: the check fails. */
  errors: number;
  warnings: number;
}

export function evaluate(input: EvaluateInput): Evaluation {
  const options = { resolveSources: input.resolveSources !== false };
  const files: FileReport[] = [];
  const elsewhere = new Map<string, Problem>();
  for (const f of input.files) {
    if (isDocumentPath(f.path)) {
      files.push(evaluateDocument(f, input.handlers, options));
      continue;
    }
    const resolve = (text: string | undefined) =>
      resolvePolicy(
        { ...(input.org ? { org: input.org } : {}), repo: { file: f.path, text } },
        input.handlers,
        options,
      );
    const head = resolve(f.head);
    const base = resolve(f.base);
    for (const p of head.problems) if (p.file !== f.path) elsewhere.set(JSON.stringify(p), p);
    const keys = policySections(input.handlers).map((s) => s.key);
    files.push({
      ...f,
      kind: "policy",
      problems: head.problems.filter((p) => p.file === f.path),
      effective: head.sections,
      broken: keys.filter((k) => !(k in head.sections)),
      changes: diffValues(base.sections, head.sections),
    });
  }
  const all = files.flatMap((f) => f.problems);
  return {
    files,
    elsewhere: [...elsewhere.values()],
    errors: all.filter((p) => p.severity === "error").length,
    warnings: all.filter((p) => p.severity === "warning").length,
  };
}

function evaluateDocument(
  f: FileVersions,
  handlers: readonly HandlerModule<any>[],
  options: { resolveSources: boolean },
): FileReport {
  const spec = policyDocuments(handlers).get(f.path);
  const read = (text: string | undefined) => {
    if (text === undefined) return { value: undefined, problems: [] as Problem[] };
    const r = validatePolicyText(text, { file: f.path, handlers, document: f.path, ...options });
    const ok = spec && !r.problems.some((p) => p.severity === "error");
    return {
      value: ok ? (mergePolicy(spec.defaults, r.value ?? {}) as Record<string, unknown>) : undefined,
      problems: r.problems,
    };
  };
  const head = read(f.head);
  const base = read(f.base);
  return {
    ...f,
    kind: "document",
    problems: head.problems,
    effective: head.value,
    broken: f.head !== undefined && head.value === undefined ? [f.path] : [],
    changes: diffValues(base.value, head.value),
  };
}
