// Pure rules of the checks API: what a create/update body may hold (document 001 section D,
// document 000 Limits) and how a suite's status follows from its runs.
import type { HubError } from "../core/types.js";

export const MAX_ANNOTATIONS_PER_REQUEST = 50;
export const MAX_RUNS_PER_NAME_IN_SUITE = 1000;
export const MAX_OUTPUT_TITLE = 255;
export const MAX_OUTPUT_TEXT = 65535;
export const MAX_ACTIONS = 3;

export const CHECK_STATUSES = ["queued", "in_progress", "completed", "waiting", "requested", "pending"] as const;
export const CHECK_CONCLUSIONS = [
  "action_required",
  "cancelled",
  "failure",
  "neutral",
  "success",
  "skipped",
  "stale",
  "timed_out",
] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];
export type CheckConclusionValue = (typeof CHECK_CONCLUSIONS)[number];

export type FieldError = NonNullable<HubError["errors"]>[number];

const isStr = (v: unknown): v is string => typeof v === "string";

/**
 * Problems with a check-run create (`mode = create`) or update body, as the API's 422 `errors`.
 * An empty list means the body is acceptable.
 */
export function checkRunBodyProblems(body: Record<string, unknown>, mode: "create" | "update"): FieldError[] {
  const problems: FieldError[] = [];
  const bad = (field: string, code: string, message?: string) =>
    problems.push({ resource: "CheckRun", field, code, ...(message ? { message } : {}) });

  if (mode === "create") {
    if (!isStr(body.name) || body.name.length === 0) bad("name", "missing_field");
    if (!isStr(body.head_sha) || body.head_sha.length === 0) bad("head_sha", "missing_field");
  } else if (body.name !== undefined && (!isStr(body.name) || body.name.length === 0)) bad("name", "invalid");

  if (body.status !== undefined && !(CHECK_STATUSES as readonly unknown[]).includes(body.status))
    bad("status", "invalid");
  if (
    body.conclusion !== undefined &&
    body.conclusion !== null &&
    !(CHECK_CONCLUSIONS as readonly unknown[]).includes(body.conclusion)
  )
    bad("conclusion", "invalid");
  if (body.status === "completed" && (body.conclusion === undefined || body.conclusion === null) && mode === "create")
    bad("conclusion", "missing_field", "Conclusion is required when status is completed.");
  if (
    body.details_url !== undefined &&
    body.details_url !== null &&
    !(isStr(body.details_url) && /^https?:\/\//.test(body.details_url))
  )
    bad("details_url", "invalid");

  for (const field of ["started_at", "completed_at"]) {
    const v = body[field];
    if (v !== undefined && (typeof v !== "string" || Number.isNaN(Date.parse(v)))) bad(field, "invalid");
  }
  if (body.output !== undefined && body.output !== null) {
    if (typeof body.output !== "object" || Array.isArray(body.output)) bad("output", "invalid");
    else problems.push(...outputProblems(body.output as Record<string, unknown>));
  }
  if (body.actions !== undefined) {
    if (!Array.isArray(body.actions)) bad("actions", "invalid");
    else {
      if (body.actions.length > MAX_ACTIONS)
        bad("actions", "custom", `Only ${MAX_ACTIONS} actions can be added at a time.`);
      body.actions.forEach((a, i) => {
        const action = (a ?? {}) as Record<string, unknown>;
        if (!isStr(action.label) || action.label.length > 20)
          bad(`actions[${i}].label`, "invalid", "label must be at most 20 characters");
        if (!isStr(action.description) || action.description.length > 40)
          bad(`actions[${i}].description`, "invalid", "description must be at most 40 characters");
        if (!isStr(action.identifier) || action.identifier.length > 20)
          bad(`actions[${i}].identifier`, "invalid", "identifier must be at most 20 characters");
      });
    }
  }
  return problems;
}

function outputProblems(output: Record<string, unknown>): FieldError[] {
  const problems: FieldError[] = [];
  const bad = (field: string, code: string, message?: string) =>
    problems.push({ resource: "CheckRun", field: `output.${field}`, code, ...(message ? { message } : {}) });
  if (!isStr(output.title)) bad("title", "missing_field");
  else if (output.title.length > MAX_OUTPUT_TITLE)
    bad("title", "custom", `title is too long (maximum is ${MAX_OUTPUT_TITLE} characters)`);
  if (!isStr(output.summary)) bad("summary", "missing_field");
  else if (output.summary.length > MAX_OUTPUT_TEXT)
    bad("summary", "custom", `summary is too long (maximum is ${MAX_OUTPUT_TEXT} characters)`);
  if (output.text !== undefined && output.text !== null) {
    if (!isStr(output.text)) bad("text", "invalid");
    else if (output.text.length > MAX_OUTPUT_TEXT)
      bad("text", "custom", `text is too long (maximum is ${MAX_OUTPUT_TEXT} characters)`);
  }
  if (output.annotations !== undefined) {
    if (!Array.isArray(output.annotations)) bad("annotations", "invalid");
    else {
      if (output.annotations.length > MAX_ANNOTATIONS_PER_REQUEST)
        bad("annotations", "custom", `Only ${MAX_ANNOTATIONS_PER_REQUEST} annotations can be added at a time.`);
      output.annotations.forEach((a, i) => problems.push(...annotationProblems(a, i)));
    }
  }
  if (output.images !== undefined && !Array.isArray(output.images)) bad("images", "invalid");
  return problems;
}

const LEVELS = ["notice", "warning", "failure"];

function annotationProblems(raw: unknown, i: number): FieldError[] {
  const a = (raw ?? {}) as Record<string, unknown>;
  const problems: FieldError[] = [];
  const bad = (field: string, code: string) =>
    problems.push({ resource: "CheckRun", field: `output.annotations[${i}].${field}`, code });
  if (!isStr(a.path) || a.path.length === 0) bad("path", "missing_field");
  if (!Number.isInteger(a.start_line)) bad("start_line", "missing_field");
  if (!Number.isInteger(a.end_line)) bad("end_line", "missing_field");
  if (!LEVELS.includes(a.annotation_level as string))
    bad("annotation_level", a.annotation_level === undefined ? "missing_field" : "invalid");
  if (!isStr(a.message) || a.message.length === 0) bad("message", "missing_field");
  if (
    Number.isInteger(a.start_line) &&
    Number.isInteger(a.end_line) &&
    (a.end_line as number) < (a.start_line as number)
  )
    bad("end_line", "invalid");
  // Columns only make sense on a single line (the API rejects them otherwise).
  if ((a.start_column !== undefined || a.end_column !== undefined) && a.start_line !== a.end_line)
    bad("start_column", "invalid");
  return problems;
}

/** Suite status and conclusion from its runs' (status, conclusion); a suite without runs is queued. */
export function suiteOutcome(runs: { status: string; conclusion: string | null }[]): {
  status: "queued" | "in_progress" | "completed";
  conclusion: CheckConclusionValue | null;
} {
  if (runs.length === 0) return { status: "queued", conclusion: null };
  if (runs.some((r) => r.status !== "completed")) {
    return {
      status: runs.some((r) => r.status === "in_progress" || r.status === "completed") ? "in_progress" : "queued",
      conclusion: null,
    };
  }
  const has = (c: string) => runs.some((r) => r.conclusion === c);
  // Order follows how the service ranks conclusions: anything needing attention wins over success.
  for (const c of ["action_required", "cancelled", "timed_out", "failure", "stale"] as const)
    if (has(c)) return { status: "completed", conclusion: c };
  if (runs.every((r) => r.conclusion === "skipped")) return { status: "completed", conclusion: "skipped" };
  if (runs.every((r) => r.conclusion === "neutral" || r.conclusion === "skipped"))
    return { status: "completed", conclusion: "neutral" };
  return { status: "completed", conclusion: "success" };
}

/** Runs to delete so that at most `limit` runs carry each name in a suite (oldest go first). */
export function runsBeyondNameLimit<T extends { id: number; name: string }>(
  runs: T[],
  limit = MAX_RUNS_PER_NAME_IN_SUITE,
): T[] {
  const byName = new Map<string, T[]>();
  for (const r of runs) {
    const list = byName.get(r.name);
    if (list) list.push(r);
    else byName.set(r.name, [r]);
  }
  const doomed: T[] = [];
  for (const list of byName.values()) {
    if (list.length <= limit) continue;
    const sorted = [...list].sort((a, b) => a.id - b.id);
    doomed.push(...sorted.slice(0, list.length - limit));
  }
  return doomed;
}

/** `filter=latest`: the most recent run per name (by start, then id). */
export function latestPerName<T extends { id: number; name: string; started_at: string | null }>(runs: T[]): T[] {
  const best = new Map<string, T>();
  for (const r of runs) {
    const cur = best.get(r.name);
    if (
      !cur ||
      (r.started_at ?? "") > (cur.started_at ?? "") ||
      ((r.started_at ?? "") === (cur.started_at ?? "") && r.id > cur.id)
    )
      best.set(r.name, r);
  }
  return runs.filter((r) => best.get(r.name) === r);
}
