// Reactions on issues, pull requests and their comments: one per user and content (creating it
// again answers 200 with the existing one), listed per subject, removable by id.
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest } from "../core/types.js";
import { actingLogin } from "../access/write-access.js";
import { issuesOf } from "../issues/store.js";
import { findComment } from "../issues/comments.js";
import type { SandboxHub } from "../sandbox-hub.js";

const READ = { auth: "installation-or-user" as const, permission: { issues: "read" as const } };
const WRITE = { auth: "installation-or-user" as const, permission: { issues: "write" as const } };
const CONTENTS = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];

interface Reaction {
  id: number;
  subject: string;
  user: string;
  content: string;
  created_at: string;
}

export function installReactionRoutes(hub: SandboxHub, router: RouteTable): void {
  const all: Reaction[] = [];
  const json = (r: Reaction) => ({
    id: r.id,
    node_id: hub.nodeId("REA_", r.id),
    user: hub.userJson(r.user),
    content: r.content,
    created_at: r.created_at,
  });

  /** `repoId#issue#n` or `repoId#comment#id`, once the subject is known to exist. */
  const subjectOf = (req: HubRequest): string => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    if (req.params.comment_id !== undefined) {
      if (!findComment(hub, repo.id, Number(req.params.comment_id))) throw notFound();
      return `${repo.id}#comment#${req.params.comment_id}`;
    }
    const n = Number(req.params.issue_number);
    if (!issuesOf(hub, repo.id).some((i) => i.number === n) && !hub.pulls.get(repo.id)?.some((p) => p.number === n))
      throw notFound();
    return `${repo.id}#issue#${n}`;
  };

  for (const base of [
    "/repos/{owner}/{repo}/issues/{issue_number}/reactions",
    "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
  ]) {
    router.add(
      "GET",
      base,
      (req) => {
        const subject = subjectOf(req);
        const content = req.query.get("content");
        return hub.paginate(
          req,
          all.filter((r) => r.subject === subject && (!content || r.content === content)).map(json),
        );
      },
      READ,
    );
    router.add(
      "POST",
      base,
      (req) => {
        const subject = subjectOf(req);
        const content = req.body?.content;
        if (content === undefined) throw validationFailed("Reaction", "content", "missing_field");
        if (typeof content !== "string" || !CONTENTS.includes(content))
          throw validationFailed("Reaction", "content", "invalid");
        const user = actingLogin(hub, req);
        const existing = all.find((r) => r.subject === subject && r.user === user && r.content === content);
        if (existing) return { status: 200, body: json(existing) };
        const r: Reaction = { id: hub.nextId(), subject, user, content, created_at: hub.timestamp() };
        all.push(r);
        hub.effect("reactions.created", { subject, content, by: user });
        return { status: 201, body: json(r) };
      },
      WRITE,
    );
    router.add(
      "DELETE",
      `${base}/{reaction_id}`,
      (req) => {
        const subject = subjectOf(req);
        const i = all.findIndex((r) => r.subject === subject && r.id === Number(req.params.reaction_id));
        if (i === -1) throw notFound();
        all.splice(i, 1);
        return { status: 204 };
      },
      WRITE,
    );
  }
}
