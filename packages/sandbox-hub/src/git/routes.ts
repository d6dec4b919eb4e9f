// Repository contents routes: files per ref (JSON and raw media types), branches, refs, commits, blobs.
import { notFound } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest, Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import type { Commit } from "./store.js";
import { blobJson, branchJson, branchListJson, commitJson, entryJson, refJson } from "./json.js";

const CONTENTS = { auth: "installation-or-user" as const, permission: { contents: "read" as const } };

function wantsRaw(req: HubRequest): boolean {
  return /application\/vnd\.github(\.v3)?\.raw/i.test(req.headers.accept ?? "");
}

function requireCommit(hub: SandboxHub, repo: Repo, ref: string | null | undefined): { sha: string; ref: string } {
  const name = ref ?? repo.default_branch;
  const sha = hub.git(repo).resolve(name, repo.default_branch);
  if (!sha) throw notFound();
  return { sha, ref: name };
}

export function installContentRoutes(hub: SandboxHub, router: RouteTable): void {
  const contents = (req: HubRequest) => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const { sha, ref } = requireCommit(hub, repo, req.query.get("ref"));
    const path = (req.params.path ?? "").replace(/^\/+|\/+$/g, "");
    const git = hub.git(repo);
    const file = path ? git.read(sha, path) : undefined;
    if (file) {
      if (wantsRaw(req)) return { status: 200, raw: file, headers: { "Content-Type": "text/plain; charset=utf-8" } };
      const blob = git.tree(sha).get(path)!;
      return { status: 200, body: entryJson(hub, repo, ref, { name: path.split("/").pop()!, path, type: "file", blob }, file) };
    }
    const entries = git.list(sha, path);
    if (entries.length === 0) throw notFound();
    return { status: 200, body: entries.map((e) => entryJson(hub, repo, ref, e)) };
  };
  router.add("GET", "/repos/{owner}/{repo}/contents", contents, CONTENTS);
  router.add("GET", "/repos/{owner}/{repo}/contents/{path+}", contents, CONTENTS);

  router.add("GET", "/repos/{owner}/{repo}/branches", (req) => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const list = [...hub.git(repo).branches.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, sha]) => branchListJson(hub, repo, name, sha));
    return hub.paginate(req, list);
  }, CONTENTS);
  /** A route answering one object of a repository, found by `find` from the request; 404 when it is not there. */
  const getOne = <T>(path: string, find: (repo: Repo, req: HubRequest) => T | undefined, render: (repo: Repo, found: T, req: HubRequest) => unknown) =>
    router.add("GET", path, (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const found = find(repo, req);
      if (!found) throw notFound();
      return { status: 200, body: render(repo, found, req) };
    }, CONTENTS);
  getOne(
    "/repos/{owner}/{repo}/branches/{branch+}",
    (repo, req) => hub.git(repo).branches.get(req.params.branch!),
    (repo, sha, req) => branchJson(hub, repo, req.params.branch!, sha),
  );
  getOne(
    "/repos/{owner}/{repo}/git/ref/{ref+}",
    (repo, req) => {
      const ref = req.params.ref!;
      const git = hub.git(repo);
      return ref.startsWith("heads/") ? git.branches.get(ref.slice(6)) : ref.startsWith("tags/") ? git.tags.get(ref.slice(5)) : undefined;
    },
    (repo, sha, req) => refJson(hub, repo, `refs/${req.params.ref!}`, sha),
  );
  router.add("GET", "/repos/{owner}/{repo}/commits/{ref+}", (req) => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const { sha } = requireCommit(hub, repo, req.params.ref);
    return { status: 200, body: commitJson(hub, repo, hub.git(repo).commits.get(sha)!, true) };
  }, CONTENTS);
  router.add("GET", "/repos/{owner}/{repo}/commits", (req) => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const git = hub.git(repo);
    let sha: string | undefined = requireCommit(hub, repo, req.query.get("sha")).sha;
    const list: Record<string, unknown>[] = [];
    while (sha) {
      const c: Commit | undefined = git.commits.get(sha);
      if (!c) break;
      list.push(commitJson(hub, repo, c, false));
      sha = c.parents[0];
    }
    return hub.paginate(req, list);
  }, CONTENTS);
  getOne(
    "/repos/{owner}/{repo}/git/blobs/{sha}",
    (repo, req) => hub.git(repo).blobs.get(req.params.sha!),
    (repo, blob, req) => blobJson(hub, repo, req.params.sha!, blob),
  );

  // download_url of a file: served without credentials for public repositories.
  router.add("GET", "/_sandbox/raw/{owner}/{repo}/{ref}/{path+}", (req) => {
    const repo = hub.requireRepo({ ...req, path: "/" }, req.params.owner!, req.params.repo!);
    const { sha } = requireCommit(hub, repo, req.params.ref);
    const file = hub.git(repo).read(sha, req.params.path!);
    if (!file) throw notFound();
    return { status: 200, raw: file, headers: { "Content-Type": "text/plain; charset=utf-8" } };
  }, { auth: "none" });
}
