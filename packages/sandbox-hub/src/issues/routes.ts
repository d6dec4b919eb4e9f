// Labels and comments on issues and pull requests (a pull request is an issue: its number is the issue
// number). Issues themselves live in ./store.ts; another number is 404.
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest } from "../core/types.js";
import { actorOf } from "../domains/shared.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { issuesOf } from "./store.js";

const READ = { auth: "installation-or-user" as const, permission: { issues: "read" as const } };
const WRITE = { auth: "installation-or-user" as const, permission: { issues: "write" as const } };

/** Label names per `repoId#number`, in the order they were added. */
const labelsByHub = new WeakMap<SandboxHub, Map<string, string[]>>();
/** Comments per `repoId#number`; the control API and reactions reach them here. */
const commentsByHub = new WeakMap<SandboxHub, { byKey: Map<string, Comment[]>; nextId: () => number }>();

function issueKey(hub: SandboxHub, req: HubRequest): string {
  const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
  const number = req.params.issue_number!;
  if (!hub.pulls.get(repo.id)?.some((p) => String(p.number) === number) && !issuesOf(hub, repo.id).some((i) => String(i.number) === number)) throw notFound();
  return `${repo.id}#${number}`;
}

function labelJson(hub: SandboxHub, req: HubRequest, name: string): Record<string, unknown> {
  return {
    name,
    url: `${hub.baseUrl}/repos/${req.params.owner}/${req.params.repo}/labels/${encodeURIComponent(name)}`,
    color: "ededed",
    default: false,
    description: null,
  };
}

export interface Comment {
  id: number;
  body: string;
  user: string;
  created_at: string;
}

export function installIssueRoutes(hub: SandboxHub, router: RouteTable): void {
  const labels = new Map<string, string[]>();
  const comments = new Map<string, Comment[]>();
  let nextCommentId = 1;
  commentsByHub.set(hub, { byKey: comments, nextId: () => nextCommentId++ });
  const commentJson = (req: HubRequest, c: Comment) => ({
    id: c.id,
    node_id: `IC_${c.id}`,
    url: `${hub.baseUrl}/repos/${req.params.owner}/${req.params.repo}/issues/comments/${c.id}`,
    issue_url: `${hub.baseUrl}/repos/${req.params.owner}/${req.params.repo}/issues/${req.params.issue_number}`,
    body: c.body,
    user: { login: c.user, type: c.user.endsWith("[bot]") ? "Bot" : "User" },
    created_at: c.created_at,
    updated_at: c.created_at,
    author_association: "NONE",
  });
  labelsByHub.set(hub, labels);
  const list = (req: HubRequest, key: string) => (labels.get(key) ?? []).map((n) => labelJson(hub, req, n));

  router.add("GET", "/repos/{owner}/{repo}/issues/{issue_number}/labels", (req) => hub.paginate(req, list(req, issueKey(hub, req))), READ);
  router.add("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels", (req) => {
    const key = issueKey(hub, req);
    const given = (req.body as { labels?: unknown } | undefined)?.labels;
    if (!Array.isArray(given) || given.length === 0 || !given.every((l) => typeof l === "string" && l.length > 0 && l.length <= 50)) {
      throw validationFailed("Label", "labels", "invalid");
    }
    const current = labels.get(key) ?? [];
    for (const name of given as string[]) {
      if (current.includes(name)) continue;
      current.push(name);
      hub.effect("issues.labeled", { by: actorOf(req.auth), repo: `${req.params.owner}/${req.params.repo}`, number: Number(req.params.issue_number), label: name });
    }
    labels.set(key, current);
    return { status: 200, body: list(req, key) };
  }, WRITE);

  router.add("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments", (req) => {
    const key = issueKey(hub, req);
    return hub.paginate(req, (comments.get(key) ?? []).map((c) => commentJson(req, c)));
  }, READ);
  router.add("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", (req) => {
    const key = issueKey(hub, req);
    const body = (req.body as { body?: unknown } | undefined)?.body;
    if (typeof body !== "string" || body.length === 0) throw validationFailed("IssueComment", "body", "missing_field");
    if (body.length > 65_536) throw validationFailed("IssueComment", "body", "too_long", "body is too long (maximum is 65536 characters)");
    const by = actorOf(req.auth);
    const user = req.auth.kind === "user" ? req.auth.login : `${hub.appSlug}[bot]`;
    const comment: Comment = { id: nextCommentId++, body, user, created_at: hub.timestamp() };
    comments.set(key, [...(comments.get(key) ?? []), comment]);
    hub.effect("issues.commented", { by, repo: `${req.params.owner}/${req.params.repo}`, number: Number(req.params.issue_number), id: comment.id });
    return { status: 201, body: commentJson(req, comment) };
  }, WRITE);
}

/** Labels of an issue or pull request, for tests (`control`-side view). */
export function labelsOf(hub: SandboxHub, repoId: number, number: number): string[] {
  return [...(labelsByHub.get(hub)?.get(`${repoId}#${number}`) ?? [])];
}

/** Comments of an issue or pull request, and a way to add one (the control API's simulated users). */
export function commentsOf(hub: SandboxHub, repoId: number, number: number): Comment[] {
  return commentsByHub.get(hub)?.byKey.get(`${repoId}#${number}`) ?? [];
}

export function addComment(hub: SandboxHub, repoId: number, number: number, body: string, user: string): Comment {
  const store = commentsByHub.get(hub)!;
  const comment: Comment = { id: store.nextId(), body, user, created_at: hub.timestamp() };
  store.byKey.set(`${repoId}#${number}`, [...(store.byKey.get(`${repoId}#${number}`) ?? []), comment]);
  return comment;
}

/** The comment with this id in a repository, with the number it belongs to. */
export function findComment(hub: SandboxHub, repoId: number, id: number): { number: number; comment: Comment } | undefined {
  for (const [key, list] of commentsByHub.get(hub)?.byKey ?? []) {
    if (!key.startsWith(`${repoId}#`)) continue;
    const comment = list.find((c) => c.id === id);
    if (comment) return { number: Number(key.split("#")[1]), comment };
  }
  return undefined;
}
