// Labels and comments on issues and pull requests (a pull request is an issue: its number is the issue
// number). Only pull requests exist in the sandbox as issues so far; another number is 404.
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest } from "../core/types.js";
import { actorOf } from "../domains/shared.js";
import type { SandboxHub } from "../sandbox-hub.js";

const READ = { auth: "installation-or-user" as const, permission: { issues: "read" as const } };
const WRITE = { auth: "installation-or-user" as const, permission: { issues: "write" as const } };

/** Label names per `repoId#number`, in the order they were added. */
const labelsByHub = new WeakMap<SandboxHub, Map<string, string[]>>();

function issueKey(hub: SandboxHub, req: HubRequest): string {
  const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
  const number = req.params.issue_number!;
  if (!hub.pulls.get(repo.id)?.some((p) => String(p.number) === number)) throw notFound();
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

interface Comment {
  id: number;
  body: string;
  user: string;
  created_at: string;
}

export function installIssueRoutes(hub: SandboxHub, router: RouteTable): void {
  const labels = new Map<string, string[]>();
  const comments = new Map<string, Comment[]>();
  let nextCommentId = 1;
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
