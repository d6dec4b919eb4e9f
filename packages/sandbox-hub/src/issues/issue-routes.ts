// Issues: list (pull requests included, as GitHub lists them), get, create, update; each change
// is an `issues` delivery (`opened`, `edited`, `closed`, `reopened`).
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest, Repo } from "../core/types.js";
import { actorOf } from "../core/shared.js";
import { actingLogin } from "../access/write-access.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { issueJson } from "./json.js";
import { createIssue, issuesOf, type Issue } from "./store.js";

const READ = { auth: "installation-or-user" as const, permission: { issues: "read" as const } };
const WRITE = { auth: "installation-or-user" as const, permission: { issues: "write" as const } };

/** Send an `issues` delivery for a change made by `login`. */
export function notifyIssue(
  hub: SandboxHub,
  repo: Repo,
  issue: Issue,
  action: string,
  login: string,
  extra: Record<string, unknown> = {},
): void {
  hub.effect(`issues.${action}`, { repo: `${repo.owner}/${repo.name}`, number: issue.number, by: login });
  void hub.deliver("issues", {
    action,
    issue: issueJson(hub, repo, issue),
    repository: hub.repoJson(repo),
    sender: hub.userJson(login),
    ...extra,
  });
}

function text(body: Record<string, unknown> | undefined, field: string): string | null | undefined {
  const v = body?.[field];
  if (v === undefined) return undefined;
  if (v === null) return null;
  if (typeof v !== "string") throw validationFailed("Issue", field, "invalid");
  return v;
}

export function installIssueCrudRoutes(hub: SandboxHub, router: RouteTable): void {
  const find = (req: HubRequest, repo: Repo) => {
    const n = Number(req.params.issue_number);
    return issuesOf(hub, repo.id).find((i) => i.number === n) ?? hub.pulls.get(repo.id)?.find((p) => p.number === n);
  };

  router.add(
    "GET",
    "/repos/{owner}/{repo}/issues",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const state = req.query.get("state") ?? "open";
      if (!["open", "closed", "all"].includes(state)) throw validationFailed("Issue", "state", "invalid");
      const items = [...issuesOf(hub, repo.id), ...(hub.pulls.get(repo.id) ?? [])]
        .filter((i) => state === "all" || i.state === state)
        .sort((a, b) => b.number - a.number);
      return hub.paginate(
        req,
        items.map((i) => issueJson(hub, repo, i)),
      );
    },
    READ,
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/issues/{issue_number}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const i = find(req, repo);
      if (!i) throw notFound();
      return { status: 200, body: issueJson(hub, repo, i) };
    },
    READ,
  );

  router.add(
    "POST",
    "/repos/{owner}/{repo}/issues",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const title = text(req.body, "title");
      if (title === undefined || title === null || title.trim() === "")
        throw validationFailed("Issue", "title", "missing_field");
      const login = actingLogin(hub, req);
      const issue = createIssue(hub, repo.id, { title, body: text(req.body, "body") ?? null, user: login });
      hub.effect("issues.created", { by: actorOf(req.auth), repo: `${repo.owner}/${repo.name}`, number: issue.number });
      notifyIssue(hub, repo, issue, "opened", login);
      return { status: 201, body: issueJson(hub, repo, issue) };
    },
    WRITE,
  );

  router.add(
    "PATCH",
    "/repos/{owner}/{repo}/issues/{issue_number}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const i = find(req, repo);
      if (!i) throw notFound();
      // Pull requests are edited through the pulls API in the sandbox.
      if ("headRef" in i)
        throw validationFailed(
          "Issue",
          "number",
          "invalid",
          "pull requests are not edited through the issues API in the sandbox",
        );
      const title = text(req.body, "title");
      const body = text(req.body, "body");
      const state = text(req.body, "state");
      if (state !== undefined && state !== "open" && state !== "closed")
        throw validationFailed("Issue", "state", "invalid");
      const reason = text(req.body, "state_reason");
      if (reason !== undefined && reason !== null && !["completed", "not_planned", "reopened"].includes(reason))
        throw validationFailed("Issue", "state_reason", "invalid");
      const changes: Record<string, { from: unknown }> = {};
      if (title !== undefined && title !== null && title !== i.title)
        ((changes.title = { from: i.title }), (i.title = title));
      if (body !== undefined && body !== i.body) ((changes.body = { from: i.body }), (i.body = body));
      const login = actingLogin(hub, req);
      i.updated_at = hub.timestamp();
      if (Object.keys(changes).length > 0) notifyIssue(hub, repo, i, "edited", login, { changes });
      if (state && state !== i.state) {
        i.state = state;
        i.closed_at = state === "closed" ? i.updated_at : null;
        i.state_reason = state === "closed" ? ((reason as Issue["state_reason"]) ?? "completed") : "reopened";
        notifyIssue(hub, repo, i, state === "closed" ? "closed" : "reopened", login);
      }
      return { status: 200, body: issueJson(hub, repo, i) };
    },
    WRITE,
  );
}
