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
      return {
        status: 200,
        body: entryJson(hub, repo, ref, { name: path.split("/").pop()!, path, type: "file", blob }, file),
      };
    }
    const entries = git.list(sha, path);
    if (entries.length === 0) throw notFound();
    return { status: 200, body: entries.map((e) => entryJson(hub, repo, ref, e)) };
  };
  router.add("GET", "/repos/{owner}/{repo}/contents", contents, CONTENTS);
  router.add("GET", "/repos/{owner}/{repo}/contents/{path+}", contents, CONTENTS);

  router.add(
    "GET",
    "/repos/{owner}/{repo}/branches",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const list = [...hub.git(repo).branches.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, sha]) => branchListJson(hub, repo, name, sha));
      return hub.paginate(req, list);
    },
    CONTENTS,
  );
  /** A route answering one object of a repository, found by `find` from the request; 404 when it is not there. */
  const getOne = <T>(
    path: string,
    find: (repo: Repo, req: HubRequest) => T | undefined,
    render: (repo: Repo, found: T, req: HubRequest) => unknown,
  ) =>
    router.add(
      "GET",
      path,
      (req) => {
        const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
        const found = find(repo, req);
        if (!found) throw notFound();
        return { status: 200, body: render(repo, found, req) };
      },
      CONTENTS,
    );
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
      return ref.startsWith("heads/")
        ? git.branches.get(ref.slice(6))
        : ref.startsWith("tags/")
          ? git.tags.get(ref.slice(5))
          : undefined;
    },
    (repo, sha, req) => refJson(hub, repo, `refs/${req.params.ref!}`, sha),
  );
  router.add(
    "GET",
    "/repos/{owner}/{repo}/commits/{ref+}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const { sha } = requireCommit(hub, repo, req.params.ref);
      return { status: 200, body: commitJson(hub, repo, hub.git(repo).commits.get(sha)!, true) };
    },
    CONTENTS,
  );
  router.add(
    "GET",
    "/repos/{owner}/{repo}/commits",
    (req) => {
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
    },
    CONTENTS,
  );
  // Compare two commits as GitHub does (`BASE...HEAD`, each a branch, tag or sha): where HEAD
  // stands relative to BASE (identical, ahead, behind, diverged), by how many commits, from which
  // merge base; the commits HEAD has that BASE lacks (oldest first, up to 250) and the files changed.
  router.add(
    "GET",
    "/repos/{owner}/{repo}/compare/{basehead+}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const basehead = req.params.basehead!;
      const dots = basehead.indexOf("...");
      if (dots <= 0 || dots + 3 >= basehead.length) throw notFound();
      const git = hub.git(repo);
      const base = git.resolve(basehead.slice(0, dots), repo.default_branch);
      const head = git.resolve(basehead.slice(dots + 3), repo.default_branch);
      if (!base || !head) throw notFound();
      const fromBase = git.ancestors(base);
      const fromHead = git.ancestors(head);
      // The nearest commit of HEAD's history (breadth first) that BASE's history holds.
      const mergeBase = [...fromHead.keys()].find((sha) => fromBase.has(sha));
      if (!mergeBase) throw notFound();
      const aheadOnly = [...fromHead.keys()].filter((sha) => !fromBase.has(sha));
      const behindBy = [...fromBase.keys()].filter((sha) => !fromHead.has(sha)).length;
      const status =
        base === head ? "identical" : aheadOnly.length === 0 ? "behind" : behindBy === 0 ? "ahead" : "diverged";
      const full = `${repo.owner}/${repo.name}`;
      const commits = aheadOnly
        .map((sha) => git.commits.get(sha)!)
        .sort((a, b) => a.date.getTime() - b.date.getTime() || fromHead.get(b.sha)! - fromHead.get(a.sha)!)
        .slice(0, 250);
      return {
        status: 200,
        body: {
          url: `${hub.baseUrl}/repos/${full}/compare/${basehead}`,
          html_url: `${hub.baseUrl}/${full}/compare/${basehead}`,
          permalink_url: `${hub.baseUrl}/${full}/compare/${repo.owner}:${base.slice(0, 7)}...${repo.owner}:${head.slice(0, 7)}`,
          diff_url: `${hub.baseUrl}/${full}/compare/${basehead}.diff`,
          patch_url: `${hub.baseUrl}/${full}/compare/${basehead}.patch`,
          base_commit: commitJson(hub, repo, git.commits.get(base)!, false),
          merge_base_commit: commitJson(hub, repo, git.commits.get(mergeBase)!, false),
          status,
          ahead_by: aheadOnly.length,
          behind_by: behindBy,
          total_commits: aheadOnly.length,
          commits: commits.map((c) => commitJson(hub, repo, c, false)),
          files: git
            .diff(mergeBase, head)
            .map((ch) => ({ sha: ch.after ?? ch.before ?? null, filename: ch.path, status: ch.status })),
        },
      };
    },
    CONTENTS,
  );
  getOne(
    "/repos/{owner}/{repo}/git/blobs/{sha}",
    (repo, req) => hub.git(repo).blobs.get(req.params.sha!),
    (repo, blob, req) => blobJson(hub, repo, req.params.sha!, blob),
  );

  // download_url of a file: served without credentials for public repositories.
  router.add(
    "GET",
    "/_sandbox/raw/{owner}/{repo}/{ref}/{path+}",
    (req) => {
      const repo = hub.requireRepo({ ...req, path: "/" }, req.params.owner!, req.params.repo!);
      const { sha } = requireCommit(hub, repo, req.params.ref);
      const file = hub.git(repo).read(sha, req.params.path!);
      if (!file) throw notFound();
      return { status: 200, raw: file, headers: { "Content-Type": "text/plain; charset=utf-8" } };
    },
    { auth: "none" },
  );
}
