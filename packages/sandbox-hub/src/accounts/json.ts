// API representations of accounts, repositories and installations (the app's own: app-json.ts). Every
// documented field is present; fields without a value are null (convention 2).
import type { Installation, Repo } from "../core/types.js";

export interface AccountSummary {
  id: number;
  login: string;
  node_id: string;
  type: string;
}

export function ownerJson(base: string, a: AccountSummary): Record<string, unknown> {
  const url = `${base}/users/${a.login}`;
  return {
    login: a.login,
    id: a.id,
    node_id: a.node_id,
    avatar_url: `${base}/_sandbox/avatars/${a.login}`,
    gravatar_id: "",
    url,
    html_url: `${base}/${a.login}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type: a.type,
    site_admin: false,
  };
}

export function orgJson(base: string, org: { id: number; login: string; node_id: string }): Record<string, unknown> {
  const url = `${base}/orgs/${org.login}`;
  return {
    login: org.login,
    id: org.id,
    node_id: org.node_id,
    url,
    repos_url: `${url}/repos`,
    events_url: `${url}/events`,
    hooks_url: `${url}/hooks`,
    issues_url: `${url}/issues`,
    members_url: `${url}/members{/member}`,
    public_members_url: `${url}/public_members{/member}`,
    avatar_url: `${base}/_sandbox/avatars/${org.login}`,
    description: null,
  };
}

const TEMPLATES: [string, string][] = [
  ["archive_url", "/{archive_format}{/ref}"],
  ["assignees_url", "/assignees{/user}"],
  ["blobs_url", "/git/blobs{/sha}"],
  ["branches_url", "/branches{/branch}"],
  ["collaborators_url", "/collaborators{/collaborator}"],
  ["comments_url", "/comments{/number}"],
  ["commits_url", "/commits{/sha}"],
  ["compare_url", "/compare/{base}...{head}"],
  ["contents_url", "/contents/{+path}"],
  ["contributors_url", "/contributors"],
  ["deployments_url", "/deployments"],
  ["downloads_url", "/downloads"],
  ["events_url", "/events"],
  ["forks_url", "/forks"],
  ["git_commits_url", "/git/commits{/sha}"],
  ["git_refs_url", "/git/refs{/sha}"],
  ["git_tags_url", "/git/tags{/sha}"],
  ["issue_comment_url", "/issues/comments{/number}"],
  ["issue_events_url", "/issues/events{/number}"],
  ["issues_url", "/issues{/number}"],
  ["keys_url", "/keys{/key_id}"],
  ["labels_url", "/labels{/name}"],
  ["languages_url", "/languages"],
  ["merges_url", "/merges"],
  ["milestones_url", "/milestones{/number}"],
  ["notifications_url", "/notifications{?since,all,participating}"],
  ["pulls_url", "/pulls{/number}"],
  ["releases_url", "/releases{/id}"],
  ["stargazers_url", "/stargazers"],
  ["statuses_url", "/statuses/{sha}"],
  ["subscribers_url", "/subscribers"],
  ["subscription_url", "/subscription"],
  ["tags_url", "/tags"],
  ["teams_url", "/teams"],
  ["trees_url", "/git/trees{/sha}"],
  ["hooks_url", "/hooks"],
];

export function repoJson(
  base: string,
  repo: Repo,
  owner: AccountSummary,
  extra: { forkParent?: Record<string, unknown> } = {},
): Record<string, unknown> {
  const url = `${base}/repos/${repo.owner}/${repo.name}`;
  const host = base.replace(/^https?:\/\//, "");
  const json: Record<string, unknown> = {
    id: repo.id,
    node_id: repo.node_id,
    name: repo.name,
    full_name: `${repo.owner}/${repo.name}`,
    owner: ownerJson(base, owner),
    private: repo.private,
    html_url: `${base}/${repo.owner}/${repo.name}`,
    description: null,
    fork: repo.fork,
    url,
    git_url: `git://${host}/${repo.owner}/${repo.name}.git`,
    ssh_url: `git@${host}:${repo.owner}/${repo.name}.git`,
    clone_url: `${base}/${repo.owner}/${repo.name}.git`,
    svn_url: `${base}/${repo.owner}/${repo.name}`,
    mirror_url: null,
    homepage: null,
    language: null,
  };
  for (const [key, suffix] of TEMPLATES) json[key] = url + suffix;
  Object.assign(json, {
    forks_count: 0,
    stargazers_count: 0,
    watchers_count: 0,
    size: 0,
    open_issues_count: 0,
    subscribers_count: 0,
    network_count: 0,
    forks: 0,
    open_issues: 0,
    watchers: 0,
    default_branch: repo.default_branch,
    is_template: false,
    topics: [],
    has_issues: true,
    has_projects: true,
    has_wiki: true,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: repo.archived,
    disabled: false,
    visibility: repo.private ? "private" : "public",
    pushed_at: repo.pushed_at,
    created_at: repo.created_at,
    updated_at: repo.updated_at,
    permissions: { admin: false, maintain: false, push: false, triage: false, pull: true },
    template_repository: null,
    allow_forking: true,
    web_commit_signoff_required: false,
    delete_branch_on_merge: false,
    license: null,
  });
  if (extra.forkParent) json.parent = extra.forkParent;
  return json;
}

export function installationJson(
  base: string,
  inst: Installation,
  account: AccountSummary,
  appSlug: string,
): Record<string, unknown> {
  return {
    id: inst.id,
    account: ownerJson(base, account),
    repository_selection: inst.repository_selection,
    access_tokens_url: `${base}/app/installations/${inst.id}/access_tokens`,
    repositories_url: `${base}/installation/repositories`,
    html_url: `${base}/organizations/${account.login}/settings/installations/${inst.id}`,
    app_id: inst.app_id,
    app_slug: appSlug,
    target_id: account.id,
    target_type: account.type === "Organization" ? "Organization" : "User",
    permissions: inst.permissions,
    events: inst.events,
    created_at: null,
    updated_at: null,
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_by: null,
    suspended_at: inst.suspended_at,
  };
}
