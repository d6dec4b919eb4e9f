// The check-run API's size rules as pure functions: what to send so a request is never
// refused for being too long, too many, or malformed.
import type { Annotation, CheckAction } from "./types.js";

export const TITLE_MAX = 255;
export const OUTPUT_MAX = 65_535;
export const ANNOTATIONS_PER_REQUEST = 50;
export const ANNOTATION_MESSAGE_MAX = 64 * 1024 - 1;
export const ACTIONS_MAX = 3;
export const ACTION_LIMITS = { label: 20, description: 40, identifier: 20 } as const;

/** Cuts `text` to `max` characters without splitting a surrogate pair. */
export function cutChars(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return text.slice(0, end);
}

/** A single-line title within the limit, with an ellipsis when cut. */
export function fitTitle(title: string): string {
  const flat = title.replace(/\s+/g, " ").trim() || "Steward";
  return flat.length <= TITLE_MAX ? flat : cutChars(flat, TITLE_MAX - 1) + "…";
}

/**
 * Markdown within `max` characters. When cut, a visible note says how much was left out and
 * where the full report is, so nothing disappears silently.
 */
export function fitMarkdown(markdown: string, pointer: string | undefined, max = OUTPUT_MAX): string {
  if (markdown.length <= max) return markdown;
  const where = pointer ? `the full report is at ${pointer}` : "the annotations list every problem";
  const note = (omitted: number) =>
    `\n\n---\n> **Cut:** ${omitted} characters did not fit the ${max}-character limit of a check run; ${where}.`;
  // The note's own length depends on the number in it; reserve room for the longest number.
  let keep = max - note(markdown.length).length;
  // Prefer cutting at a line boundary so a table row or code fence is not left half-drawn.
  const lineEnd = markdown.lastIndexOf("\n", keep);
  if (lineEnd > keep * 0.9) keep = lineEnd;
  const kept = cutChars(markdown, keep);
  const fences = (kept.match(/^```/gm) ?? []).length;
  const closed = fences % 2 === 1 ? kept + "\n```" : kept;
  return closed + note(markdown.length - kept.length);
}

/** An annotation the API accepts: lines from 1, columns only on one line, lengths within limits. */
export function fitAnnotation(a: Annotation): Annotation {
  const start = Math.max(1, Math.floor(a.start_line) || 1);
  const end = Math.max(start, Math.floor(a.end_line) || start);
  const out: Annotation = {
    path: a.path,
    start_line: start,
    end_line: end,
    annotation_level:
      a.annotation_level === "failure" || a.annotation_level === "warning" ? a.annotation_level : "notice",
    message: cutChars(a.message || "(no message)", ANNOTATION_MESSAGE_MAX),
  };
  if (start === end && a.start_column !== undefined && a.start_column >= 1) {
    out.start_column = Math.floor(a.start_column);
    out.end_column = Math.max(out.start_column, Math.floor(a.end_column ?? a.start_column));
  }
  if (a.title) out.title = fitTitle(a.title);
  if (a.raw_details) out.raw_details = cutChars(a.raw_details, ANNOTATION_MESSAGE_MAX);
  return out;
}

/** Groups of at most 50: the first goes with the create (or update), the rest with updates. */
export function annotationBatches(annotations: readonly Annotation[]): Annotation[][] {
  const batches: Annotation[][] = [];
  for (let i = 0; i < annotations.length; i += ANNOTATIONS_PER_REQUEST)
    batches.push(annotations.slice(i, i + ANNOTATIONS_PER_REQUEST));
  return batches.length > 0 ? batches : [[]];
}

/**
 * Buttons within the API's limits. Labels and descriptions are shortened; an identifier cannot
 * be (the `requested_action` event would carry a name the handler does not know), nor can a
 * fourth button be dropped silently: both are programming errors and throw before any request.
 */
export function fitActions(actions: readonly CheckAction[] | undefined): CheckAction[] | undefined {
  if (!actions) return undefined;
  if (actions.length > ACTIONS_MAX)
    throw new RangeError(`a check run takes at most ${ACTIONS_MAX} actions, got ${actions.length}`);
  return actions.map((a) => {
    if (a.identifier.length === 0 || a.identifier.length > ACTION_LIMITS.identifier) {
      throw new RangeError(
        `check run action identifier "${a.identifier}" must be 1 to ${ACTION_LIMITS.identifier} characters`,
      );
    }
    return {
      label: shorten(a.label, ACTION_LIMITS.label),
      description: shorten(a.description, ACTION_LIMITS.description),
      identifier: a.identifier,
    };
  });
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : cutChars(text, max - 1) + "…";
}

/** Identity of an annotation for comparing a run's existing annotations with new ones. */
export function annotationKey(a: Partial<Annotation>): string {
  return JSON.stringify([
    a.path,
    a.start_line,
    a.end_line,
    a.start_column ?? null,
    a.end_column ?? null,
    a.annotation_level,
    a.message,
  ]);
}

/**
 * Whether an existing run can be reused for `wanted`, and which annotations still need sending.
 * The API only appends annotations: a run already carrying annotations that are no longer
 * wanted cannot be corrected, so a new run is created then (the old one drops out of the
 * `filter=latest` view); otherwise only the missing ones are sent.
 */
export function planAnnotations(
  existing: readonly Partial<Annotation>[],
  wanted: readonly Annotation[],
): { reuse: boolean; send: Annotation[] } {
  const remaining = new Map<string, number>();
  for (const a of wanted) remaining.set(annotationKey(a), (remaining.get(annotationKey(a)) ?? 0) + 1);
  for (const a of existing) {
    const key = annotationKey(a);
    const left = remaining.get(key) ?? 0;
    if (left === 0) return { reuse: false, send: [...wanted] };
    remaining.set(key, left - 1);
  }
  const send: Annotation[] = [];
  for (const a of wanted) {
    const key = annotationKey(a);
    const left = remaining.get(key) ?? 0;
    if (left > 0) {
      send.push(a);
      remaining.set(key, left - 1);
    }
  }
  return { reuse: true, send };
}
