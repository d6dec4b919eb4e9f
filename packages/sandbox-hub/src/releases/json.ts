// A release as the REST API renders it (`GET /repos/{owner}/{repo}/releases/{id}`).
import type { Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";

export interface Release {
  id: number;
  repoId: number;
  tag_name: string;
  target_commitish: string;
  name: string | null;
  body: string | null;
  draft: boolean;
  prerelease: boolean;
  author: string;
  created_at: string;
  published_at: string | null;
}

export function releaseJson(hub: SandboxHub, repo: Repo, r: Release): Record<string, unknown> {
  const api = `${hub.baseUrl}/repos/${repo.owner}/${repo.name}`;
  const tag = encodeURIComponent(r.tag_name);
  return {
    url: `${api}/releases/${r.id}`,
    assets_url: `${api}/releases/${r.id}/assets`,
    upload_url: `${hub.baseUrl}/_sandbox/uploads/repos/${repo.owner}/${repo.name}/releases/${r.id}/assets{?name,label}`,
    // A draft has no tag yet: its page is addressed as `untagged-...`.
    html_url: `${hub.baseUrl}/${repo.owner}/${repo.name}/releases/${r.draft ? `untagged-${r.id}` : `tag/${tag}`}`,
    id: r.id,
    node_id: hub.nodeId("RE_", r.id),
    tag_name: r.tag_name,
    target_commitish: r.target_commitish,
    name: r.name,
    body: r.body,
    draft: r.draft,
    prerelease: r.prerelease,
    created_at: r.created_at,
    published_at: r.published_at,
    author: hub.userJson(r.author),
    assets: [],
    tarball_url: r.draft ? null : `${api}/tarball/${tag}`,
    zipball_url: r.draft ? null : `${api}/zipball/${tag}`,
  };
}
