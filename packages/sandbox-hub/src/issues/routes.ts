// Label and comment routes on issues and pull requests (a pull request is an issue: its number is
// the issue number). Issues themselves live in ./store.ts; another number is 404.
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest } from "../core/types.js";
import { actorOf } from "../core/shared.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { addComment, commentsOf } from "./comments.js";
import { commentJson, labelJson } from "./json.js";
import { labelLists } from "./labels.js";
import { issuesOf } from "./store.js";

const READ = { auth: "installation-or-user" as const, permission: { issues: "read" as const } };
const WRITE = { auth: "installation-or-user" as const, permission: { issues: "write" as const } };

/** The issue or pull request a request names: its repository id, number and `repoId#number` key. */
function issueOf(hub: SandboxHub, req: HubRequest): { repoId: number; number: number; key: string } {
  const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
  const number = req.params.issue_number!;
  if (
    !hub.pulls.get(repo.id)?.some((p) => String(p.number) === number) &&
    !issuesOf(hub, repo.id).some((i) => String(i.number) === number)
  )
    throw notFound();
  return { repoId: repo.id, number: Number(number), key: `${repo.id}#${number}` };
}

/** The repository as the request spells it: the links in answers use the caller's spelling. */
const named = (req: HubRequest) => ({ owner: req.params.owner!, name: req.params.repo! });

export function installIssueRoutes(hub: SandboxHub, router: RouteTable): void {
  const labels = labelLists(hub);
  const list = (req: HubRequest, key: string) => (labels.get(key) ?? []).map((n) => labelJson(hub, named(req), n));

  router.add(
    "GET",
    "/repos/{owner}/{repo}/issues/{issue_number}/labels",
    (req) => hub.paginate(req, list(req, issueOf(hub, req).key)),
    READ,
  );
  router.add(
    "POST",
    "/repos/{owner}/{repo}/issues/{issue_number}/labels",
    (req) => {
      const { key } = issueOf(hub, req);
      const given = (req.body as { labels?: unknown } | undefined)?.labels;
      if (
        !Array.isArray(given) ||
        given.length === 0 ||
        !given.every((l) => typeof l === "string" && l.length > 0 && l.length <= 50)
      ) {
        throw validationFailed("Label", "labels", "invalid");
      }
      const current = labels.get(key) ?? [];
      for (const name of given as string[]) {
        if (current.includes(name)) continue;
        current.push(name);
        hub.effect("issues.labeled", {
          by: actorOf(req.auth),
          repo: `${req.params.owner}/${req.params.repo}`,
          number: Number(req.params.issue_number),
          label: name,
        });
      }
      labels.set(key, current);
      return { status: 200, body: list(req, key) };
    },
    WRITE,
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/issues/{issue_number}/comments",
    (req) => {
      const { repoId, number } = issueOf(hub, req);
      return hub.paginate(
        req,
        commentsOf(hub, repoId, number).map((c) => commentJson(hub, named(req), number, c)),
      );
    },
    READ,
  );
  router.add(
    "POST",
    "/repos/{owner}/{repo}/issues/{issue_number}/comments",
    (req) => {
      const { repoId, number } = issueOf(hub, req);
      const body = (req.body as { body?: unknown } | undefined)?.body;
      if (typeof body !== "string" || body.length === 0)
        throw validationFailed("IssueComment", "body", "missing_field");
      if (body.length > 65_536)
        throw validationFailed("IssueComment", "body", "too_long", "body is too long (maximum is 65536 characters)");
      const by = actorOf(req.auth);
      const user = req.auth.kind === "user" ? req.auth.login : `${hub.appSlug}[bot]`;
      const comment = addComment(hub, repoId, number, body, user);
      hub.effect("issues.commented", {
        by,
        repo: `${req.params.owner}/${req.params.repo}`,
        number: Number(req.params.issue_number),
        id: comment.id,
      });
      return { status: 201, body: commentJson(hub, named(req), number, comment) };
    },
    WRITE,
  );
}
