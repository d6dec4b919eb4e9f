// When GitHub says the event happened, read from the payload, so that the lag between GitHub and
// Steward can be measured (the delivery-lag histogram). Only fields that change with the event a
// delivery reports are used: a `created_at` of an object that was later updated would measure the
// object's age, not the delivery's lag. Events without such a field are not measured.

type Json = Record<string, unknown>;

function objectAt(payload: Json, key: string): Json | undefined {
  const value = payload[key];
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function timeOf(value: unknown): number | undefined {
  if (typeof value === "string") {
    const ms = Date.parse(value);
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}

/** The first of `fields` of `payload[key]` that holds a time. */
function firstTime(payload: Json, key: string, ...fields: string[]): number | undefined {
  const object = objectAt(payload, key);
  if (!object) return undefined;
  for (const field of fields) {
    const ms = timeOf(object[field]);
    if (ms !== undefined) return ms;
  }
  return undefined;
}

/**
 * The field of each event that GitHub sets when the event happens. The order within one event
 * is the order the action's own time is found in (a completed job has `completed_at`, a started
 * one only `started_at`, a queued one only `created_at`).
 */
const READERS = new Map<string, (payload: Json, action: string | undefined) => number | undefined>(
  Object.entries({
    workflow_run: (p) => firstTime(p, "workflow_run", "updated_at"),
    workflow_job: (p, action) =>
      action === "completed"
        ? firstTime(p, "workflow_job", "completed_at", "started_at", "created_at")
        : action === "in_progress"
          ? firstTime(p, "workflow_job", "started_at", "created_at")
          : firstTime(p, "workflow_job", "created_at"),
    check_run: (p, action) =>
      action === "completed"
        ? firstTime(p, "check_run", "completed_at", "started_at")
        : action === "created"
          ? firstTime(p, "check_run", "started_at")
          : undefined,
    check_suite: (p) => firstTime(p, "check_suite", "updated_at"),
    deployment: (p) => firstTime(p, "deployment", "created_at"),
    deployment_status: (p) => firstTime(p, "deployment_status", "created_at"),
    deployment_protection_rule: (p) => firstTime(p, "deployment", "created_at"),
    // The repository's pushed_at is this push's time in seconds (other events carry an older one).
    push: (p) => {
      const seconds = objectAt(p, "repository")?.pushed_at;
      return typeof seconds === "number" && Number.isFinite(seconds) ? seconds * 1000 : undefined;
    },
    pull_request: (p) => firstTime(p, "pull_request", "updated_at"),
    pull_request_review: (p) => firstTime(p, "review", "submitted_at"),
    issues: (p) => firstTime(p, "issue", "updated_at"),
    issue_comment: (p) => firstTime(p, "comment", "updated_at"),
    status: (p: Json) => timeOf(p.updated_at),
  } satisfies Record<string, (payload: Json, action: string | undefined) => number | undefined>),
);

/** Events whose lag is measured (docs/operations.md lists them with their fields). */
export const LAG_EVENTS: readonly string[] = [...READERS.keys()];

/** When GitHub says the event of this payload happened, or undefined when it does not say. */
export function githubTimeOf(event: string, action: string | undefined, payload: Json): Date | undefined {
  const read = READERS.get(event);
  const ms = read?.(payload, action);
  return ms === undefined ? undefined : new Date(ms);
}
