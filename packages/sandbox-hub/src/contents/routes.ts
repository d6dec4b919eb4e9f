// Writing repository contents: `PUT` creates or updates one file, `DELETE` removes it, each as a
// commit on a branch (a `push` delivery follows). As on GitHub, replacing or deleting a file needs
// its current blob `sha`: missing is 422, stale is 409; a file that is not there cannot be deleted.
import { notFound } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import { HubError, type HubRequest, type Repo } from "../core/types.js";
import { pushFiles } from "../git/push.js";
import { actingLogin } from "../access/write-access.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { fileEntryJson, writeCommitJson } from "./json.js";

const WRITE = { auth: "installation-or-user" as const, permission: { contents: "write" as const } };

const invalid = (what: string) => new HubError(422, `Invalid request.\n\n${what}`);

function field(body: Record<string, unknown> | undefined, name: string, required: boolean): string | undefined {
  const v = body?.[name];
  if (v === undefined || v === null) {
    if (required) throw invalid(`"${name}" wasn't supplied.`);
    return undefined;
  }
  if (typeof v !== "string") throw invalid(`For 'properties/${name}', ${JSON.stringify(v)} is not a string.`);
  return v;
}

function target(
  hub: SandboxHub,
  req: HubRequest,
): { repo: Repo; path: string; branch: string; current: string | undefined } {
  const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
  const path = req.params.path!.replace(/^\/+|\/+$/g, "");
  const branch = field(req.body, "branch", false) ?? repo.default_branch;
  const head = hub.git(repo).branches.get(branch);
  if (!head) throw new HubError(404, `Branch ${branch} not found`);
  return { repo, path, branch, current: hub.git(repo).tree(head).get(path) };
}

/** Stale or missing `sha` for a file that exists. */
function checkSha(given: string | undefined, current: string, path: string): void {
  if (given === undefined) throw invalid(`"sha" wasn't supplied.`);
  if (given !== current) throw new HubError(409, `${path} does not match ${given}`);
}

export function installContentWriteRoutes(hub: SandboxHub, router: RouteTable): void {
  router.add(
    "PUT",
    "/repos/{owner}/{repo}/contents/{path+}",
    (req) => {
      const message = field(req.body, "message", true)!;
      const content = field(req.body, "content", true)!;
      if (!/^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/.test(content)) throw invalid("content is not valid Base64");
      const { repo, path, branch, current } = target(hub, req);
      if (current !== undefined) checkSha(field(req.body, "sha", false), current, path);
      const bytes = Buffer.from(content, "base64");
      const pushed = pushFiles(hub, {
        owner: repo.owner,
        repo: repo.name,
        branch,
        files: { [path]: bytes.toString("utf8") },
        message,
        pusher: actingLogin(hub, req),
      });
      const git = hub.git(repo);
      const blob = git.tree(pushed.sha).get(path)!;
      return {
        status: current === undefined ? 201 : 200,
        body: {
          content: fileEntryJson(hub, repo, path, blob, bytes.length, branch),
          commit: writeCommitJson(hub, repo, git.commits.get(pushed.sha)!),
        },
      };
    },
    WRITE,
  );

  router.add(
    "DELETE",
    "/repos/{owner}/{repo}/contents/{path+}",
    (req) => {
      const message = field(req.body, "message", true)!;
      const { repo, path, branch, current } = target(hub, req);
      if (current === undefined) throw notFound();
      checkSha(field(req.body, "sha", false), current, path);
      const pushed = pushFiles(hub, {
        owner: repo.owner,
        repo: repo.name,
        branch,
        files: { [path]: null },
        message,
        pusher: actingLogin(hub, req),
      });
      return {
        status: 200,
        body: { content: null, commit: writeCommitJson(hub, repo, hub.git(repo).commits.get(pushed.sha)!) },
      };
    },
    WRITE,
  );
}
