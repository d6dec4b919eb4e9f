// The answer of a contents write: the file's entry (null after a delete) and the new commit.
import type { Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import type { Commit } from "../git/store.js";

export function fileEntryJson(
  hub: SandboxHub,
  repo: Repo,
  path: string,
  blob: string,
  size: number,
  branch: string,
): Record<string, unknown> {
  const full = `${repo.owner}/${repo.name}`;
  const encoded = path.split("/").map(encodeURIComponent).join("/");
  const self = `${hub.baseUrl}/repos/${full}/contents/${encoded}?ref=${encodeURIComponent(branch)}`;
  const git = `${hub.baseUrl}/repos/${full}/git/blobs/${blob}`;
  const html = `${hub.baseUrl}/${full}/blob/${encodeURIComponent(branch)}/${encoded}`;
  return {
    name: path.split("/").at(-1),
    path,
    sha: blob,
    size,
    url: self,
    html_url: html,
    git_url: git,
    download_url: `${hub.baseUrl}/_sandbox/raw/${full}/${encodeURIComponent(branch)}/${encoded}`,
    type: "file",
    _links: { self, git, html },
  };
}

export function writeCommitJson(hub: SandboxHub, repo: Repo, c: Commit): Record<string, unknown> {
  const full = `${repo.owner}/${repo.name}`;
  const person = { name: c.author.name, email: c.author.email, date: hub.timestamp(c.date) };
  return {
    sha: c.sha,
    node_id: hub.nodeId("C_", parseInt(c.sha.slice(0, 8), 16)),
    url: `${hub.baseUrl}/repos/${full}/git/commits/${c.sha}`,
    html_url: `${hub.baseUrl}/${full}/commit/${c.sha}`,
    author: person,
    committer: person,
    message: c.message,
    tree: { sha: c.treeSha, url: `${hub.baseUrl}/repos/${full}/git/trees/${c.treeSha}` },
    parents: c.parents.map((sha) => ({
      sha,
      url: `${hub.baseUrl}/repos/${full}/git/commits/${sha}`,
      html_url: `${hub.baseUrl}/${full}/commit/${sha}`,
    })),
  };
}
