// Git objects as the REST API renders them: contents entries, commits, branches, refs and blobs.
import type { Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import type { Commit } from "./store.js";

function encodePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

/** Base64 in lines of 60 characters, as the contents API sends it. */
function wrapBase64(buf: Buffer): string {
  const b64 = buf.toString("base64");
  return (b64.match(/.{1,60}/g) ?? [""]).join("\n") + "\n";
}

export function entryJson(
  hub: SandboxHub,
  repo: Repo,
  ref: string,
  e: { name: string; path: string; type: "file" | "dir"; blob?: string },
  content?: Buffer,
) {
  const full = `${repo.owner}/${repo.name}`;
  const self = `${hub.baseUrl}/repos/${full}/contents/${encodePath(e.path)}?ref=${encodeURIComponent(ref)}`;
  const git =
    e.type === "file"
      ? `${hub.baseUrl}/repos/${full}/git/blobs/${e.blob}`
      : `${hub.baseUrl}/repos/${full}/git/trees/${ref}`;
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
    download_url:
      e.type === "file" ? `${hub.baseUrl}/_sandbox/raw/${full}/${encodeURIComponent(ref)}/${encodePath(e.path)}` : null,
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
    parents: c.parents.map((p) => ({
      sha: p,
      url: `${hub.baseUrl}/repos/${full}/commits/${p}`,
      html_url: `${hub.baseUrl}/${full}/commit/${p}`,
    })),
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

export function branchJson(hub: SandboxHub, repo: Repo, name: string, sha: string) {
  const full = `${repo.owner}/${repo.name}`;
  return {
    name,
    commit: commitJson(hub, repo, hub.git(repo).commits.get(sha)!, false),
    _links: {
      self: `${hub.baseUrl}/repos/${full}/branches/${encodePath(name)}`,
      html: `${hub.baseUrl}/${full}/tree/${encodePath(name)}`,
    },
    protected: false,
    protection: { enabled: false, required_status_checks: { enforcement_level: "off", contexts: [], checks: [] } },
    protection_url: `${hub.baseUrl}/repos/${full}/branches/${encodePath(name)}/protection`,
  };
}

/** A branch as `GET /branches` lists it: the head commit by reference only. */
export function branchListJson(hub: SandboxHub, repo: Repo, name: string, sha: string) {
  return {
    name,
    commit: { sha, url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/commits/${sha}` },
    protected: false,
  };
}

export function refJson(hub: SandboxHub, repo: Repo, ref: string, sha: string) {
  const full = `${repo.owner}/${repo.name}`;
  return {
    ref,
    node_id: hub.nodeId("REF_", repo.id),
    url: `${hub.baseUrl}/repos/${full}/git/${ref}`,
    object: { sha, type: "commit", url: `${hub.baseUrl}/repos/${full}/git/commits/${sha}` },
  };
}

export function blobJson(hub: SandboxHub, repo: Repo, sha: string, blob: Buffer) {
  return {
    sha,
    node_id: hub.nodeId("B_", repo.id),
    size: blob.length,
    url: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/git/blobs/${sha}`,
    content: wrapBase64(blob),
    encoding: "base64",
  };
}
