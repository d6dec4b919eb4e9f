// Which handler modules take a delivery, and whether a push touched policy files.
import type { StewardConfig } from "../config/types.js";
import type { RoutedDelivery } from "../handler.js";
import { DOCUMENT_DIR, POLICY_FILE } from "../policy/paths.js";

/**
 * `*` takes every delivery; `workflow_run` every action of it; `workflow_run.completed` only that
 * action. Asked for every delivery the intake receives, for every handler: compared in place,
 * without building `event.action` strings or a closure each time.
 */
export function takesEvent(events: readonly string[], event: string, action: string | undefined): boolean {
  for (const e of events) {
    if (e === "*" || e === event) return true;
    if (
      action !== undefined &&
      e.length === event.length + 1 + action.length &&
      e.charCodeAt(event.length) === DOT &&
      e.startsWith(event) &&
      e.endsWith(action)
    )
      return true;
  }
  return false;
}

const DOT = 0x2e;

interface Routable {
  events: readonly string[];
  takes?(delivery: RoutedDelivery, config: StewardConfig): boolean;
}

/** A handler's own narrowing; one that throws takes the delivery (its run then decides), never fails the intake. */
function narrowedIn(handler: Routable, delivery: RoutedDelivery, config: StewardConfig): boolean {
  if (!handler.takes) return true;
  try {
    return handler.takes(delivery, config) !== false;
  } catch {
    return true;
  }
}

/** The handlers that take `delivery`: subscribed to its event and action, and not narrowing it out. */
export function routeDelivery<H extends Routable>(
  handlers: readonly H[],
  delivery: RoutedDelivery,
  config: StewardConfig,
): H[] {
  return handlers.filter(
    (h) => takesEvent(h.events, delivery.event, delivery.action) && narrowedIn(h, delivery, config),
  );
}

/**
 * Events after which a repository's policy files may exist although Steward last found none, with
 * no push it could have seen: a repository created, renamed, transferred or unarchived, added to
 * the installation, or readable again (new permissions accepted, unsuspended). They are rare.
 */
const REPOSITORY_EVENTS = new Set(["repository", "installation_repositories", "installation"]);

export function renewsRepositories(event: string): boolean {
  return REPOSITORY_EVENTS.has(event);
}

/**
 * Whether the engine itself needs the delivery run, whichever handlers take it: a push that may
 * add, change or remove a policy file, or a repository or installation event, so the cached policy
 * of its repositories is dropped.
 */
export function engineTakes(delivery: { event: string; payload: string }): boolean {
  if (REPOSITORY_EVENTS.has(delivery.event)) return true;
  return delivery.event === "push" && pushMayTouchPolicy(delivery.payload);
}

/**
 * Pure: the repositories whose cached policy files a repository or installation event makes
 * unreliable (`owner/name` as the payload names them); none for other events.
 */
export function repositoriesRenewed(event: string, payload: unknown): { owner: string; repo: string }[] {
  if (!REPOSITORY_EVENTS.has(event) || typeof payload !== "object" || payload === null) return [];
  const p = payload as {
    repository?: { full_name?: unknown };
    repositories?: { full_name?: unknown }[];
    repositories_added?: { full_name?: unknown }[];
    changes?: { repository?: { name?: { from?: unknown } }; owner?: { from?: { user?: { login?: unknown } } } };
  };
  const named = [
    p.repository,
    ...(Array.isArray(p.repositories) ? p.repositories : []),
    ...(Array.isArray(p.repositories_added) ? p.repositories_added : []),
  ].flatMap((r) => (typeof r?.full_name === "string" ? [r.full_name] : []));
  // A renamed repository was known under its old name too.
  const from = p.changes?.repository?.name?.from;
  if (typeof from === "string" && typeof p.repository?.full_name === "string")
    named.push(`${p.repository.full_name.split("/")[0]}/${from}`);
  return named.flatMap((full) => {
    const [owner, repo, ...rest] = full.split("/");
    return owner && repo && rest.length === 0 ? [{ owner, repo }] : [];
  });
}

/** GitHub lists at most this many commits in a push delivery: a longer push may touch paths it does not list. */
export const PUSH_COMMITS_LISTED = 2048;
/** Fewer characters than any payload text listing PUSH_COMMITS_LISTED commits (each commit's JSON takes 300 or more). */
const LISTING_ALL_CHARS = PUSH_COMMITS_LISTED * 200;

// Documents count in any repository, not only the admin one: a needless invalidation costs one
// conditional read, a missed one serves an old policy until it is next revalidated.
function mayBePolicyPath(path: string): boolean {
  return path === POLICY_FILE || path === ".github/steward.yaml" || path.startsWith(DOCUMENT_DIR);
}

interface PushCommit {
  added?: string[];
  modified?: string[];
  removed?: string[];
}

/**
 * Pure: whether a push's payload text could name a policy path, without parsing it. Every policy
 * path holds `steward`, and JSON text holds a string's characters as they are or as `\u` escapes:
 * text with neither cannot (`pushTouchesPolicy` would say false), unless it is long enough to list
 * as many commits as GitHub lists.
 */
export function pushMayTouchPolicy(text: string): boolean {
  return text.length >= LISTING_ALL_CHARS || text.includes("steward") || text.includes("\\u");
}

/**
 * True when a push delivery's commits add, change or remove `.github/steward.yml` or anything under
 * `.github/steward/`, or may: a push listing as many commits as GitHub lists may have more.
 */
export function pushTouchesPolicy(event: string, payload: unknown): boolean {
  if (event !== "push" || typeof payload !== "object" || payload === null) return false;
  const p = payload as { commits?: PushCommit[]; head_commit?: PushCommit | null };
  if (Array.isArray(p.commits) && p.commits.length >= PUSH_COMMITS_LISTED) return true;
  const commits = [...(Array.isArray(p.commits) ? p.commits : []), ...(p.head_commit ? [p.head_commit] : [])];
  return commits.some((c) => [...(c.added ?? []), ...(c.modified ?? []), ...(c.removed ?? [])].some(mayBePolicyPath));
}
