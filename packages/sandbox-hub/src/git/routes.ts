// Repository contents routes: files per ref (JSON and raw media types), branches, refs, commits, blobs.
import { notFound } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest, Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import type { Commit } from "./store.js";

const CONTENTS = { auth: "installation-or-user" as const, permission: { contents: "read" as const } };

function encodePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

/** Base64 in lines of 60 characters, as the contents API sends it. */
function wrapBase64(buf: Buffer): string {
  const b64 = buf.toString("base64");
  return (b64.match(/.{1,60}/g) ?? [""]).join("\n") + "\n";
}

function wantsRaw(req: HubRequest): boolean {
  return /application\/vnd\.github(\.v3)?\.raw/i.test(req.headers.accept ?? "");
}

function entryJson(hub: SandboxHub, repo: Repo, ref: string, e: { name: string; path: string; type: "file" | "dir"; blob?: string }, content?: Buffer) {
  const full = `${repo.owner}/${repo.name}`;
  const self = `${hub.baseUrl}/repos/${full}/contents/${encodePath(e.path)}?ref=${encodeURIComponent(ref)}`;
  const git = e.type === "file" ? `${hub.baseUrl}/repos/${full}/git/blobs/${e.blob}` : `${hub.baseUrl}/repos/${full}/git/trees/${ref}`;
  const html = `${hub.baseUrl}/${full}/${e.type === "file" ? "blob" : "tree"}/${encodeURIComponent(ref)}/${encodePath(e.path)}`;
  const json: Record<string, unknown> = {
    type: e.type,
    size: e.type === "file" ? (content?.length ?? hub.git(repo).blobs.get(e.blob!)?.length ?? 0) : 0,
    name: e.name,
    path: e.path,
    sha: e.blob ?? null,
    url: self,
    git_url: git,
    html_url: html,
    download_url: e.type === "file" ? `${hub.baseUrl}/_sandbox/raw/${full}/${encodeURIComponent(ref)}/${encodePath(e.path)}` : null,
    _links: { self, git, html },
  };
  if (content) {
    json.content = wrapBase64(content);
    json.encoding = "base64";
  }
  return json;
}

export function commitJson(hub: SandboxHub, repo: Repo, c: Commit, withFiles: boolean): Record<string, unknown> {
  const full = `${repo.owner}/${repo.name}`;
  const person = { name: c.author.name, email: c.author.email, date: hub.timestamp(c.date) };
  const json: Record<string, unknown> = {
    sha: c.sha,
    node_id: hub.nodeId("C_", parseInt(c.sha.slice(0, 8), 16)),
    commit: {
      author: person,
      committer: person,
      message: c.message,
      tree: { sha: c.treeSha, url: `${hub.baseUrl}/repos/${full}/git/trees/${c.treeSha}` },
      url: `${hub.baseUrl}/repos/${full}/git/commits/${c.sha}`,
      comment_count: 0,
      verification: { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null },
    },
    url: `${hub.baseUrl}/repos/${full}/commits/${c.sha}`,
    html_url: `${hub.baseUrl}/${full}/commit/${c.sha}`,
    comments_url: `${hub.baseUrl}/repos/${full}/commits/${c.sha}/comments`,
    author: c.author.login ? hub.userJson(c.author.login) : null,
    committer: c.author.login ? hub.userJson(c.author.login) : null,
    parents: c.parents.map((p) => ({ sha: p, url: `${hub.baseUrl}/repos/${full}/commits/${p}`, html_url: `${hub.baseUrl}/${full}/commit/${p}` })),
  };
  if (withFiles) {
    const git = hub.git(repo);
    const changes = git.diff(c.parents[0], c.sha);
    json.files = changes.map((ch) => ({
      sha: ch.after ?? ch.before ?? null,
      filename: ch.path,
      status: ch.status,
      blob_url: `${hub.baseUrl}/${full}/blob/${c.sha}/${encodePath(ch.path)}`,
      raw_url: `${hub.baseUrl}/${full}/raw/${c.sha}/${encodePath(ch.path)}`,
      contents_url: `${hub.baseUrl}/repos/${full}/contents/${encodePath(ch.path)}?ref=${c.sha}`,
    }));
  }
  return json;
}

function requireCommit(hub: SandboxHub, repo: Repo, ref: string | null | undefined): { sha: string; ref: string } {
  const name = ref ?? repo.default_branch;
  const sha = hub.git(repo).resolve(name, repo.default_branch);
  if (!sha) throw notFound();
  return { sha, ref: name };
}

function branchJson(hub: SandboxHub, repo: Repo, name: string, sha: string) {
  const full = `${repo.owner}/${repo.name}`;
  return {
    name,
    commit: commitJson(hub, repo, hub.git(repo).commits.get(sha)!, false),
    _links: { self: `${hub.baseUrl}/repos/${full}/branches/${encodePath(name)}`, html: `${hub.baseUrl}/${full}/tree/${encodePath(name)}` },
    protected: false,
    protection: { enabled: false, required_status_checks: { enforcement_level: "off", contexts: [], checks: [] } },
    protection_url: `${hub.baseUrl}/repos/${full}/branches/${encodePath(name)}/protection`,
  };
}

function refJson(hub: SandboxHub, repo: Repo, ref: string, sha: string) {
  const full = `${repo.owner}/${repo.name}`;
  return {
    ref,
    node_id: hub.nodeId("REF_", repo.id),
    url: `${hub.baseUrl}/repos/${full}/git/${ref}`,
    object: { sha, type: "commit", url: `${hub.baseUrl}/repos/${full}/git/commits/${sha}` },
  };
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
    const list = [...hub.git(repo).branches.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, sha]) => ({
      name,
      commit: { sha, url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/commits/${sha}` },
      protected: false,
    }));
    return hub.paginate(req, list);
  }, CONTENTS);
  router.add("GET", "/repos/{owner}/{repo}/branches/{branch+}", (req) => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const sha = hub.git(repo).branches.get(req.params.branch!);
    if (!sha) throw notFound();
    return { status: 200, body: branchJson(hub, repo, req.params.branch!, sha) };
  }, CONTENTS);
  router.add("GET", "/repos/{owner}/{repo}/git/ref/{ref+}", (req) => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const ref = req.params.ref!;
    const git = hub.git(repo);
    const sha = ref.startsWith("heads/") ? git.branches.get(ref.slice(6)) : ref.startsWith("tags/") ? git.tags.get(ref.slice(5)) : undefined;
    if (!sha) throw notFound();
    return { status: 200, body: refJson(hub, repo, `refs/${ref}`, sha) };
  }, CONTENTS);
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
  router.add("GET", "/repos/{owner}/{repo}/git/blobs/{sha}", (req) => {
    const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
    const blob = hub.git(repo).blobs.get(req.params.sha!);
    if (!blob) throw notFound();
    return {
      status: 200,
      body: { sha: req.params.sha, node_id: hub.nodeId("B_", repo.id), size: blob.length, url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/git/blobs/${req.params.sha}`, content: wrapBase64(blob), encoding: "base64" },
    };
  }, CONTENTS);

  // download_url of a file: served without credentials for public repositories.
  router.add("GET", "/_sandbox/raw/{owner}/{repo}/{ref}/{path+}", (req) => {
    const repo = hub.requireRepo({ ...req, path: "/" }, req.params.owner!, req.params.repo!);
    const { sha } = requireCommit(hub, repo, req.params.ref);
    const file = hub.git(repo).read(sha, req.params.path!);
    if (!file) throw notFound();
    return { status: 200, raw: file, headers: { "Content-Type": "text/plain; charset=utf-8" } };
  }, { auth: "none" });
}
