// Turns ajv's raw errors into readable findings with a JSON path: one finding per real
// mistake (anyOf/oneOf noise folded), unknown keys with a did-you-mean.
import type { ErrorObject } from "ajv";
import { didYouMean, suggestionNote } from "./suggest.js";
import type { PathSegment } from "./positions.js";

export interface SchemaFinding {
  path: PathSegment[];
  /** Point at the key of the last path segment rather than its value. */
  atKey: boolean;
  message: string;
  suggestion?: string;
  /** The finding is an unknown key (removing it would satisfy this rule). */
  unknownKey?: boolean;
}

/** Readable findings for ajv errors (ajv must run with `verbose: true` for suggestions). */
export function describeSchemaErrors(
  errors: readonly ErrorObject[],
  prefix: readonly PathSegment[] = [],
): SchemaFinding[] {
  const findings = fold(errors.filter((e) => e.keyword !== "if")).map((e) => describe(e, prefix));
  const seen = new Set<string>();
  return findings.filter((f) => {
    const id = JSON.stringify([f.path, f.message]);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

const COMBINATORS = new Set(["anyOf", "oneOf"]);

/**
 * For each outermost anyOf/oneOf that failed: when some alternative matched the value's type,
 * its own errors say what is wrong inside it; otherwise one "must be A or B" is clearer than
 * one complaint per alternative.
 */
function fold(errors: readonly ErrorObject[]): ErrorObject[] {
  const combinators = errors.filter((e) => COMBINATORS.has(e.keyword) && Object.keys(e.params).length === 0);
  const outer = combinators.filter(
    (c) => !combinators.some((o) => o !== c && c.schemaPath.startsWith(o.schemaPath + "/")),
  );
  if (outer.length === 0) return [...errors];
  const consumed = new Set<ErrorObject>();
  const out: ErrorObject[] = [];
  for (const c of outer) {
    consumed.add(c);
    const prefix = c.schemaPath + "/";
    const branches = new Map<number, ErrorObject[]>();
    for (const e of errors) {
      if (!e.schemaPath.startsWith(prefix)) continue;
      consumed.add(e);
      const index = Number(e.schemaPath.slice(prefix.length).split("/")[0]);
      if (!branches.has(index)) branches.set(index, []);
      branches.get(index)!.push(e);
    }
    const typeMismatch = (list: ErrorObject[]) =>
      list.some(
        (e) =>
          e.instancePath === c.instancePath &&
          (e.keyword === "type" || e.keyword === "const" || e.keyword === "enum") &&
          e.schemaPath.split("/").length === prefix.split("/").length + 1,
      );
    const candidates = [...branches.values()].filter((list) => !typeMismatch(list));
    if (candidates.length > 0) {
      candidates.sort((a, b) => a.length - b.length);
      out.push(...fold(candidates[0]!));
    } else {
      out.push({ ...c, message: alternativesMessage(c, [...branches.values()].flat()) });
    }
  }
  out.push(...errors.filter((e) => !consumed.has(e)));
  return out;
}

function alternativesMessage(c: ErrorObject, branchErrors: ErrorObject[]): string {
  const expected: string[] = [];
  for (const e of branchErrors) {
    if (e.instancePath !== c.instancePath) continue;
    if (e.keyword === "type") expected.push(...[e.params.type].flat().map(String));
    else if (e.keyword === "const") expected.push(JSON.stringify(e.params.allowedValue));
    else if (e.keyword === "enum")
      expected.push(...(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)));
  }
  const unique = [...new Set(expected)];
  return unique.length > 0 ? `must be ${unique.join(" or ")}${gotType(c.data)}` : "does not match any allowed form";
}

function pointerPath(instancePath: string): PathSegment[] {
  if (instancePath === "") return [];
  return instancePath
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((s) => (/^(0|[1-9]\d*)$/.test(s) ? Number(s) : s));
}

/** Paths in findings are relative to the validated value; messages name them from `prefix`. */
function describe(e: ErrorObject, prefix: readonly PathSegment[]): SchemaFinding {
  const path = pointerPath(e.instancePath);
  const named = [...prefix, ...path];
  const where = named.length > 0 ? `"${named.join(".")}" ` : "";
  switch (e.keyword) {
    case "additionalProperties": {
      const key = String(e.params.additionalProperty);
      const allowed = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const suggestion = didYouMean(key, allowed);
      const inside = named.length > 0 ? ` in "${named.join(".")}"` : "";
      return {
        path: [...path, key],
        atKey: true,
        unknownKey: true,
        message: `unknown key "${key}"${inside}${suggestionNote(suggestion)}`,
        ...(suggestion ? { suggestion } : {}),
      };
    }
    case "required":
      return {
        path,
        atKey: path.length > 0,
        message: `${where}is missing required key "${String(e.params.missingProperty)}"`.trimStart(),
      };
    case "enum": {
      const allowed = (e.params.allowedValues as unknown[]) ?? [];
      const suggestion =
        typeof e.data === "string"
          ? didYouMean(
              e.data,
              allowed.filter((v): v is string => typeof v === "string"),
            )
          : undefined;
      const list = allowed.map((v) => JSON.stringify(v)).join(", ");
      return {
        path,
        atKey: false,
        message: `${where}must be one of ${list}${suggestionNote(suggestion)}`,
        ...(suggestion ? { suggestion } : {}),
      };
    }
    case "const":
      return { path, atKey: false, message: `${where}must be ${JSON.stringify(e.params.allowedValue)}` };
    case "type":
      return {
        path,
        atKey: false,
        message: `${where}must be ${[e.params.type].flat().join(" or ")}${gotType(e.data)}`,
      };
    default:
      return { path, atKey: false, message: `${where}${e.message ?? "is invalid"}` };
  }
}

function gotType(data: unknown): string {
  if (data === undefined) return "";
  const kind =
    data === null ? "empty" : Array.isArray(data) ? "a list" : typeof data === "object" ? "a map" : typeof data;
  return ` (got ${kind})`;
}
