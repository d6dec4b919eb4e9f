// Pull request routes: get, list, changed files (paginated).
import { notFound } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { fileJson, type PullRequest } from "./model.js";
import { changedFiles, headSha, pullJson } from "./ops.js";

const READ = { auth: "installation-or-user" as const, permission: { pull_requests: "read" as const } };

function requirePull(hub: SandboxHub, req: HubRequest): PullRequest {
  const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
  const pr = hub.pulls.get(repo.id)?.find((p) => String(p.number) === req.params.pull_number);
  if (!pr) throw notFound();
  return pr;
}

export function installPullRoutes(hub: SandboxHub, router: RouteTable): void {
  router.add(
    "GET",
    "/repos/{owner}/{repo}/pulls",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const state = req.query.get("state") ?? "open";
      const head = req.query.get("head");
      const list = (hub.pulls.get(repo.id) ?? [])
        .filter((p) => state === "all" || p.state === state)
        .filter((p) => !head || `${hub.repoById(p.headRepoId)!.owner}:${p.headRef}` === head)
        .slice()
        .reverse();
      return hub.paginate(
        req,
        list.map((p) => pullJson(hub, p)),
      );
    },
    READ,
  );
  router.add(
    "GET",
    "/repos/{owner}/{repo}/pulls/{pull_number}",
    (req) => ({ status: 200, body: pullJson(hub, requirePull(hub, req)) }),
    READ,
  );
  router.add(
    "GET",
    "/repos/{owner}/{repo}/pulls/{pull_number}/files",
    (req) => {
      const pr = requirePull(hub, req);
      const head = hub.repoById(pr.headRepoId)!;
      const git = hub.git(head);
      const sha = headSha(hub, pr);
      const text = (blob: string | undefined) => (blob ? git.blobs.get(blob)?.toString("utf8") : undefined);
      const base = hub.repoById(pr.baseRepoId)!;
      // The API lists at most 3000 files a pull request.
      const files = changedFiles(hub, pr)
        .slice(0, 3000)
        .map((ch) => fileJson(hub.baseUrl, `${base.owner}/${base.name}`, sha, ch, text));
      return hub.paginate(req, files);
    },
    READ,
  );
}
