// Validation of one policy file's text: YAML syntax and duplicate keys, each section's
// schema, then each section's semantic check, every problem at its file position.
// Shared by the loader, the `steward/config` check and `steward validate`, so they never
// disagree. Never throws, whatever the input.
import { Ajv, type ValidateFunction } from "ajv";
import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document } from "yaml";
import type { HandlerModule } from "../handler.js";
import { isPlainObject, mergePolicy, policyDocuments, policySections } from "./merge.js";
import { checkExpandedSize, MAX_EXPANDED_VALUES } from "./expanded-size.js";
import { MAX_NESTING, shapeProblem } from "./nesting.js";
import { locatePath, offsetRange, type PathSegment } from "./positions.js";
import { describeSchemaErrors } from "./schema-errors.js";
import { withPatternTally } from "./patterns.js";
import { didYouMean, suggestionNote } from "./suggest.js";
import type { CheckOptions, JsonSchema, Problem, SemanticCheck } from "./types.js";

export interface ValidateOptions {
  /** Name used in problems, e.g. `.github/steward.yml` or `acme/.github:.github/steward.yml`. */
  file: string;
  handlers: readonly HandlerModule<any>[];
  /** Path of an admin document like `.github/steward/secrets.yml`; omitted = steward.yml. */
  document?: string;
  /**
   * false: the text is untrusted (a fork's pull request), so semantic checks validate its
   * structure only and never look at the host (e.g. whether an `env:` or `file:` source of
   * `secrets.yml` exists). Default true, as `steward validate` and the service load policies.
   */
  resolveSources?: boolean;
  /** With `resolveSources`: the organisation whose exposed sources may be resolved (see CheckOptions). */
  account?: string;
}

/** A part of a file validated on its own: a steward.yml section, or a whole admin document. */
interface Part {
  /** Section key, or "" for a whole document. */
  key: string;
  prefix: PathSegment[];
  schema: JsonSchema;
  defaults: unknown;
  check?: SemanticCheck<any>;
}

export interface PolicyAnalysis {
  /** The parsed value (undefined when the YAML could not be read). */
  value: unknown;
  problems: Problem[];
  /** Section keys ("" for a document) that have at least one error. */
  invalid: Set<string>;
  /** Position of a JSON path in this file, and whether the path exists there. */
  locate(
    path: readonly PathSegment[],
    opts?: { key?: boolean },
  ): { line: number; column: number; endColumn?: number; exact: boolean };
}

/**
 * Largest policy file read, in characters. Parsing, validating and locating problems run on the
 * event loop; a sane policy is a few KiB, and the contents API would serve up to 1 MB.
 */
export const MAX_POLICY_CHARS = 64 * 1024;
/** Schema problems reported per part: locating each costs a walk of the document. */
export const MAX_REPORTED_PROBLEMS = 50;

export function validatePolicyText(text: string, opts: ValidateOptions): { value: unknown; problems: Problem[] } {
  const { value, problems } = analysePolicyText(text, opts);
  return { value, problems };
}

/** Full analysis of one file (what `validatePolicyText` returns, plus what merging needs). */
export function analysePolicyText(text: string, opts: ValidateOptions): PolicyAnalysis {
  return withPatternTally(() => analyse(text, opts));
}

function analyse(text: string, opts: ValidateOptions): PolicyAnalysis {
  const lineCounter = new LineCounter();
  let doc: Document | undefined;
  const problems: Problem[] = [];
  const invalid = new Set<string>();
  const locate: PolicyAnalysis["locate"] = (path, o) => locatePath(doc, lineCounter, path, o);
  const push = (p: Omit<Problem, "file">) => problems.push({ file: opts.file, ...p });
  let value: unknown;
  try {
    if (typeof text !== "string") throw new TypeError("policy text is not a string");
    if (text.length > MAX_POLICY_CHARS) {
      push({
        line: 1,
        column: 1,
        message: `the file is ${text.length} characters long, more than the ${MAX_POLICY_CHARS} Steward reads`,
        path: [],
        severity: "error",
      });
      invalid.add(opts.document === undefined ? "*" : "");
      return { value: undefined, problems, invalid, locate };
    }
    // Read once with the library's linear lexer before the document is built (see nesting.ts).
    const shape = shapeProblem(text, MAX_NESTING, MAX_EXPANDED_VALUES);
    if (shape) {
      const before = text.slice(0, shape.offset);
      const line = before.split("\n").length;
      push({
        line,
        column: shape.offset - before.lastIndexOf("\n"),
        message: shape.message,
        path: [],
        severity: "error",
      });
      invalid.add(opts.document === undefined ? "*" : "");
      return { value: undefined, problems, invalid, locate };
    }
    // Duplicate keys are found below in one pass: the library's own check compares every pair of a map's keys.
    doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false, strict: true });
    for (const e of [...doc.errors, ...doc.warnings]) {
      const pos = offsetRange(lineCounter, e.pos[0], e.pos[1]);
      push({
        line: pos.line,
        column: pos.column,
        ...(pos.endColumn ? { endColumn: pos.endColumn } : {}),
        message: yamlMessage(e.code, e.message),
        path: [],
        severity: e.name === "YAMLWarning" ? "warning" : "error",
      });
    }
    if (doc.errors.length === 0 && reportDuplicateKeys(doc, lineCounter, push) > 0) {
      invalid.add(opts.document === undefined ? "*" : "");
      return { value: undefined, problems, invalid, locate };
    }
    if (doc.errors.length > 0) {
      invalid.add(opts.document === undefined ? "*" : "");
      return { value: undefined, problems, invalid, locate };
    }
    const expansion = checkExpandedSize(doc);
    if (expansion) {
      const pos = offsetRange(lineCounter, expansion.offset, expansion.offset);
      push({ line: pos.line, column: pos.column, message: expansion.message, path: [], severity: "error" });
      invalid.add(opts.document === undefined ? "*" : "");
      return { value: undefined, problems, invalid, locate };
    }
    // The expanded size is bounded above, so plain values may be aliased any number of times.
    value = doc.toJS({ maxAliasCount: -1 });
    reportNonScalarKeys(doc, lineCounter, push);
    const parts = partsFor(value, opts, locate, push);
    if (parts === "invalid") invalid.add("*");
    else
      for (const part of parts) {
        // An empty admin document reads as an empty map, like an empty steward.yml.
        const partValue = part.key === "" ? (value ?? {}) : valueAt(value, part.prefix);
        const errors = validatePart(part, partValue, locate, push, checkOptions(opts));
        if (errors > 0) invalid.add(part.key);
      }
  } catch (e) {
    // Reached only by inputs the YAML library rejects outright (e.g. alias bombs): still a problem, never a crash.
    push({
      line: 1,
      column: 1,
      message: `cannot read policy: ${(e as Error)?.message ?? String(e)}`,
      path: [],
      severity: "error",
    });
    invalid.add(opts.document === undefined ? "*" : "");
    value = undefined;
  }
  problems.sort((a, b) => a.line - b.line || a.column - b.column);
  return { value, problems, invalid, locate };
}

function yamlMessage(code: string, message: string): string {
  if (code === "DUPLICATE_KEY") return "duplicate key: " + message.charAt(0).toLowerCase() + message.slice(1);
  if (/call stack/i.test(message)) return "YAML syntax error: nested too deeply";
  return `YAML syntax error: ${message}`;
}

/** Reports each key that repeats one before it in the same map, at the repeat; returns how many. */
function reportDuplicateKeys(
  doc: Document,
  lineCounter: LineCounter,
  push: (p: Omit<Problem, "file">) => void,
): number {
  let found = 0;
  const walk = (node: unknown) => {
    if (!node || typeof node !== "object") return;
    const items = (node as { items?: unknown[] }).items;
    if (!Array.isArray(items)) return;
    const seen = new Set<unknown>();
    for (const item of items) {
      if (isPair(item)) {
        if (isMap(node) && isScalar(item.key)) {
          const key = item.key.value;
          if (seen.has(key)) {
            const range = item.key.range;
            const pos = range ? offsetRange(lineCounter, range[0], range[1]) : { line: 1, column: 1 };
            push({ ...pos, message: "duplicate key: map keys must be unique", path: [], severity: "error" });
            found++;
          }
          seen.add(key);
        }
        walk(item.value);
      } else walk(item);
    }
  };
  walk(doc.contents);
  return found;
}

/** Keys like `? [a, b]` turn into strings silently; in a policy they are always a mistake. */
function reportNonScalarKeys(doc: Document, lineCounter: LineCounter, push: (p: Omit<Problem, "file">) => void) {
  const walk = (node: unknown, path: PathSegment[], depth: number) => {
    if (depth > 200 || !node || typeof node !== "object") return;
    const items = (node as { items?: unknown[] }).items;
    if (!Array.isArray(items)) return;
    items.forEach((item, i) => {
      if (isPair(item)) {
        if (isMap(node) && item.key !== null && !isScalar(item.key)) {
          const range = (item.key as { range?: [number, number, number] }).range;
          const pos = range ? offsetRange(lineCounter, range[0], range[1]) : { line: 1, column: 1 };
          push({ ...pos, message: "keys must be plain text, not lists or maps", path, severity: "error" });
        }
        walk(item.value, [...path, isScalar(item.key) ? String(item.key.value) : "?"], depth + 1);
      } else walk(item, [...path, i], depth + 1);
    });
  };
  walk(doc.contents, [], 0);
}

function valueAt(value: unknown, path: readonly PathSegment[]): unknown {
  let v = value;
  for (const s of path)
    v = isPlainObject(v) || Array.isArray(v) ? (v as Record<string, unknown>)[s as string] : undefined;
  return v;
}

/** The parts of this file to validate; reports unknown top-level keys and unknown documents. */
function partsFor(
  value: unknown,
  opts: ValidateOptions,
  locate: PolicyAnalysis["locate"],
  push: (p: Omit<Problem, "file">) => void,
): Part[] | "invalid" {
  if (opts.document !== undefined) {
    const documents = policyDocuments(opts.handlers);
    const spec = documents.get(opts.document);
    if (!spec) {
      const suggestion = didYouMean(opts.document, documents.keys());
      push({
        line: 1,
        column: 1,
        message: `"${opts.document}" is not a Steward policy document${suggestionNote(suggestion)}`,
        path: [],
        severity: "error",
        ...(suggestion ? { suggestion } : {}),
      });
      return "invalid";
    }
    return [{ key: "", prefix: [], schema: spec.schema, defaults: spec.defaults, check: spec.check }];
  }
  const sections = policySections(opts.handlers);
  if (value === null || value === undefined) return [];
  if (!isPlainObject(value)) {
    const pos = locate([]);
    push({
      line: pos.line,
      column: pos.column,
      message: `a policy file must be a map of sections (${sections.map((s) => s.key).join(", ")}), not ${Array.isArray(value) ? "a list" : typeof value}`,
      path: [],
      severity: "error",
    });
    return "invalid";
  }
  const keys = sections.map((s) => s.key);
  for (const key of Object.keys(value)) {
    if (keys.includes(key)) continue;
    const suggestion = didYouMean(key, keys);
    const pos = locate([key], { key: true });
    push({
      line: pos.line,
      column: pos.column,
      ...(pos.endColumn ? { endColumn: pos.endColumn } : {}),
      message: `unknown section "${key}"${suggestionNote(suggestion)}; known sections: ${keys.join(", ") || "(none)"}`,
      path: [key],
      severity: "error",
      ...(suggestion ? { suggestion } : {}),
    });
  }
  return sections
    .filter((s) => value[s.key] !== undefined && value[s.key] !== null)
    .map((s) => ({ key: s.key, prefix: [s.key], schema: s.schema, defaults: s.defaults, check: s.check }));
}

const ajv = new Ajv({ allErrors: true, strict: false, verbose: true, logger: false });
const compiled = new WeakMap<object, ValidateFunction | Error>();

function compile(schema: JsonSchema): ValidateFunction | Error {
  let v = compiled.get(schema);
  if (!v) {
    try {
      v = ajv.compile(schema);
    } catch (e) {
      v = e instanceof Error ? e : new Error(String(e));
    }
    compiled.set(schema, v);
  }
  return v;
}

/** What semantic checks may consult: the host only for trusted text. */
export function checkOptions(opts: { resolveSources?: boolean; account?: string } = {}): CheckOptions {
  return { resolveSources: opts.resolveSources !== false, ...(opts.account ? { account: opts.account } : {}) };
}

/** Schema, then (only when the schema passed) the semantic check. Returns the number of errors. */
function validatePart(
  part: Part,
  value: unknown,
  locate: PolicyAnalysis["locate"],
  push: (p: Omit<Problem, "file">) => void,
  options: CheckOptions,
): number {
  const label = part.key || "document";
  const validate = compile(part.schema);
  if (validate instanceof Error) {
    const pos = locate(part.prefix, { key: true });
    push({
      line: pos.line,
      column: pos.column,
      message: `the schema of ${label} cannot be used: ${validate.message}`,
      path: part.prefix,
      severity: "error",
    });
    return 1;
  }
  if (!validate(value)) {
    const findings = describeSchemaErrors(validate.errors ?? [], part.prefix);
    for (const f of findings.slice(0, MAX_REPORTED_PROBLEMS)) {
      const path = [...part.prefix, ...f.path];
      const pos = locate(path, { key: f.atKey });
      push({
        line: pos.line,
        column: pos.column,
        ...(pos.endColumn ? { endColumn: pos.endColumn } : {}),
        message: f.message,
        path,
        severity: "error",
        ...(f.suggestion ? { suggestion: f.suggestion } : {}),
      });
    }
    if (findings.length > MAX_REPORTED_PROBLEMS) {
      const pos = locate(part.prefix, { key: true });
      push({
        line: pos.line,
        column: pos.column,
        message: `${findings.length - MAX_REPORTED_PROBLEMS} more problems in ${label} not shown`,
        path: part.prefix,
        severity: "error",
      });
    }
    // Typos are the commonest mistake: when unknown keys are the only schema problem, the
    // rest of the section is still checked, so one pass shows every problem of the file.
    if (findings.every((f) => f.unknownKey)) {
      const stripped = withoutPaths(
        value,
        findings.map((f) => f.path),
      );
      if (validate(stripped)) reportCheck(part, stripped, locate, push, options);
    }
    return findings.length;
  }
  return reportCheck(part, value, locate, push, options);
}

/** Runs the part's semantic check on a schema-valid value, reporting at positions; returns the errors. */
function reportCheck(
  part: Part,
  value: unknown,
  locate: PolicyAnalysis["locate"],
  push: (p: Omit<Problem, "file">) => void,
  options: CheckOptions,
): number {
  const found = runCheck(part, mergePolicy(part.defaults, value), options);
  for (const p of found) {
    const pos = locate(p.path, { key: false });
    push({
      line: pos.line,
      column: pos.column,
      ...(pos.endColumn ? { endColumn: pos.endColumn } : {}),
      message: p.message,
      path: p.path,
      severity: p.severity,
    });
  }
  return found.filter((p) => p.severity === "error").length;
}

/** A copy of `value` without the keys at `paths`. */
function withoutPaths(value: unknown, paths: PathSegment[][]): unknown {
  const copy = mergePolicy(undefined, value);
  for (const path of paths) {
    const parent = valueAt(copy, path.slice(0, -1));
    if (isPlainObject(parent)) delete parent[path.at(-1) as string];
  }
  return copy;
}

export interface CheckFinding {
  path: PathSegment[];
  message: string;
  severity: "error" | "warning";
}

/** Runs a part's semantic check on an already schema-valid value; a throwing check becomes a finding. */
export function runCheck(
  part: { key: string; prefix: PathSegment[]; check?: SemanticCheck<any> },
  value: unknown,
  options: CheckOptions = checkOptions(),
): CheckFinding[] {
  const found: CheckFinding[] = [];
  if (!part.check) return found;
  try {
    part.check(
      value,
      (path, message, severity = "error") => {
        found.push({
          path: [...part.prefix, ...(Array.isArray(path) ? path : [])],
          message: String(message),
          severity,
        });
      },
      { ...options },
    );
  } catch (e) {
    found.push({
      path: part.prefix,
      message: `${part.key || "document"}: check failed: ${(e as Error)?.message ?? String(e)}`,
      severity: "error",
    });
  }
  return found;
}
