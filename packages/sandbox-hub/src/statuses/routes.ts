// Commit statuses: create (`statuses: write`), list per ref and the combined status
// (`statuses: read`); each new status is a `status` delivery.
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import { HubError, type HubRequest, type Repo } from "../core/types.js";
import { actorOf } from "../core/shared.js";
import { actingLogin } from "../access/write-access.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { optionalString } from "../body/fields.js";
import { combinedJson, statusJson, type CommitStatus, type StatusState } from "./json.js";

const READ = { auth: "installation-or-user" as const, permission: { statuses: "read" as const } };
const WRITE = { auth: "installation-or-user" as const, permission: { statuses: "write" as const } };
const STATES: readonly StatusState[] = ["error", "failure", "pending", "success"];
/** GitHub keeps at most 1000 statuses per sha and context. */
const PER_CONTEXT = 1000;

const optional = (body: Record<string, unknown> | undefined, name: string): string | null =>
  optionalString(body, "Status", name) ?? null;

export function installStatusRoutes(hub: SandboxHub, router: RouteTable): void {
  const all: CommitStatus[] = [];
  const forRef = (req: HubRequest): { repo: Repo; sha: string; list: CommitStatus[] } => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const sha = hub.resolveRef(repo, req.params.ref!);
    if (!sha) throw notFound();
    return { repo, sha, list: all.filter((s) => s.repoId === repo.id && s.sha === sha).reverse() };
  };

  router.add(
    "POST",
    "/repos/{owner}/{repo}/statuses/{sha}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const sha = req.params.sha!;
      if (!hub.git(repo).commits.has(sha)) throw new HubError(422, `No commit found for SHA: ${sha}`);
      const state = req.body?.state;
      if (state === undefined || state === null) throw validationFailed("Status", "state", "missing_field");
      if (typeof state !== "string" || !STATES.includes(state as StatusState))
        throw validationFailed("Status", "state", "custom", "state is not included in the list");
      const context = optional(req.body, "context") ?? "default";
      const description = optional(req.body, "description");
      if (description !== null && description.length > 140)
        throw validationFailed(
          "Status",
          "description",
          "custom",
          "description is too long (maximum is 140 characters)",
        );
      if (all.filter((s) => s.repoId === repo.id && s.sha === sha && s.context === context).length >= PER_CONTEXT) {
        throw validationFailed(
          "Status",
          "context",
          "custom",
          `This SHA and context has reached the maximum number of statuses.`,
        );
      }
      const s: CommitStatus = {
        id: hub.nextId(),
        repoId: repo.id,
        sha,
        state: state as StatusState,
        context,
        description,
        target_url: optional(req.body, "target_url"),
        creator: actingLogin(hub, req),
        created_at: hub.timestamp(),
      };
      all.push(s);
      hub.effect("statuses.created", {
        by: actorOf(req.auth),
        repo: `${repo.owner}/${repo.name}`,
        sha,
        context,
        state: s.state,
      });
      void hub.deliver("status", {
        id: s.id,
        sha,
        name: `${repo.owner}/${repo.name}`,
        target_url: s.target_url,
        context,
        description,
        state: s.state,
        branches: [],
        created_at: s.created_at,
        updated_at: s.created_at,
        repository: hub.repoJson(repo),
        sender: hub.userJson(s.creator),
      });
      return { status: 201, body: statusJson(hub, repo, s) };
    },
    WRITE,
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/commits/{ref}/statuses",
    (req) => {
      const { repo, list } = forRef(req);
      return hub.paginate(
        req,
        list.map((s) => statusJson(hub, repo, s)),
      );
    },
    READ,
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/commits/{ref}/status",
    (req) => {
      const { repo, sha, list } = forRef(req);
      return { status: 200, body: combinedJson(hub, repo, sha, list) };
    },
    READ,
  );
}
