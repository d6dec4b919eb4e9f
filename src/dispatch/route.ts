// Which handler modules take a delivery, and whether a push touched policy files.

/** `*` takes every delivery; `workflow_run` every action of it; `workflow_run.completed` only that action. */
export function takesEvent(events: readonly string[], event: string, action: string | undefined): boolean {
  return events.some((e) => e === "*" || e === event || (action !== undefined && e === `${event}.${action}`));
}

export function routeDelivery<H extends { events: readonly string[] }>(handlers: readonly H[], event: string, action: string | undefined): H[] {
  return handlers.filter((h) => takesEvent(h.events, event, action));
}

function isPolicyPath(path: string): boolean {
  return path === ".github/steward.yml" || path === ".github/steward.yaml" || path.startsWith(".github/steward/");
}

interface PushCommit {
  added?: string[];
  modified?: string[];
  removed?: string[];
}

/**
 * Pure: whether a push's payload text could name a policy path, without parsing it. Every policy
 * path holds `steward`, and JSON text holds a string's characters as they are or as `\u` escapes:
 * text with neither cannot (`pushTouchesPolicy` would say false).
 */
export function pushMayTouchPolicy(text: string): boolean {
  return text.includes("steward") || text.includes("\\u");
}

/** True when a push delivery's commits add, change or remove `.github/steward.yml` or anything under `.github/steward/`. */
export function pushTouchesPolicy(event: string, payload: unknown): boolean {
  if (event !== "push" || typeof payload !== "object" || payload === null) return false;
  const p = payload as { commits?: PushCommit[]; head_commit?: PushCommit | null };
  const commits = [...(Array.isArray(p.commits) ? p.commits : []), ...(p.head_commit ? [p.head_commit] : [])];
  return commits.some((c) => [...(c.added ?? []), ...(c.modified ?? []), ...(c.removed ?? [])].some(isPolicyPath));
}
