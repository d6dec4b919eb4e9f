// Helpers every domain module needs: who made a request, the common webhook envelope,
// API URLs of a repository, and the app objects check runs and deployments carry.
import type { Hub, Repo } from "./types.js";
import { HubError } from "./types.js";

/** The app id GitHub Actions' own check suites and runs belong to. */
export const ACTIONS_APP_ID = 15368;

export { actorOf } from "./actor.js";

export function repoApi(hub: Hub, repo: Repo, suffix = ""): string {
  return `${hub.baseUrl}/repos/${repo.owner}/${repo.name}${suffix}`;
}

export function repoHtml(hub: Hub, repo: Repo, suffix = ""): string {
  return `${hub.baseUrl}/${repo.owner}/${repo.name}${suffix}`;
}

/** Find a repository by owner and name for control calls (no caller to check reach for). */
export function findRepo(hub: Hub, owner: string, name: string): Repo {
  const repo = hub.reposOf(owner).find((r) => r.name.toLowerCase() === name.toLowerCase());
  if (!repo) throw new HubError(404, `No repository ${owner}/${name} in the sandbox`);
  return repo;
}

/** The bot user an app acts as (its `sender` in deliveries it causes). */
export function botSender(slug: string, id: number): Record<string, unknown> {
  const login = `${slug}[bot]`;
  return {
    login,
    id,
    node_id: `BOT_${id}`,
    avatar_url: `https://avatars.example.invalid/in/${id}`,
    gravatar_id: "",
    url: `/users/${encodeURIComponent(login)}`,
    html_url: `/apps/${slug}`,
    type: "Bot",
    site_admin: false,
  };
}

export function appJson(hub: Hub, appId: number): Record<string, unknown> {
  const actions = appId === ACTIONS_APP_ID;
  const own = appId === hub.appId ? (hub as Hub & { appSlug?: string }).appSlug : undefined;
  const other = (hub as Hub & { accounts?: { otherApps?: Map<number, string> } }).accounts?.otherApps?.get(appId);
  const slug = actions ? "github-actions" : (own ?? other ?? `sandbox-app-${appId}`);
  return {
    id: appId,
    slug,
    node_id: `MDM6QXBw${appId}`,
    client_id: actions ? null : `Iv1.sandbox${appId}`,
    owner: actions ? null : null,
    name: actions ? "GitHub Actions" : `Sandbox app ${appId}`,
    description: null,
    external_url: `${hub.baseUrl}/apps/${slug}`,
    html_url: `${hub.baseUrl}/apps/${slug}`,
    created_at: "2020-01-01T00:00:00Z",
    updated_at: "2020-01-01T00:00:00Z",
    permissions: {},
    events: [],
  };
}

/** The organisation object of deliveries: the core's rendering when it offers one. */
export function orgJson(hub: Hub, login: string): Record<string, unknown> | null {
  const org = hub.org(login);
  if (!org) return null;
  const render = (hub as Hub & { orgJson?: (login: string) => Record<string, unknown> | null }).orgJson;
  return (
    render?.call(hub, org.login) ?? {
      login: org.login,
      id: org.id,
      node_id: org.node_id,
      url: `${hub.baseUrl}/orgs/${org.login}`,
      description: null,
    }
  );
}

/**
 * Send a delivery about a repository to the installation on its owner, with the envelope
 * every repository event carries (repository, organization, sender, installation).
 */
export function deliverRepoEvent(
  hub: Hub,
  repo: Repo,
  event: string,
  body: Record<string, unknown>,
  sender: Record<string, unknown>,
): Promise<unknown> {
  const installation = hub.installationFor(repo);
  if (!installation || installation.suspended_at) return Promise.resolve(undefined);
  const payload: Record<string, unknown> = {
    ...body,
    repository: hub.repoJson(repo),
    sender,
    installation: { id: installation.id, node_id: hub.nodeId("Installation", installation.id) },
  };
  const org = orgJson(hub, repo.owner);
  if (org) payload.organization = org;
  return hub.deliver(event, payload, { installationId: installation.id });
}

/** Keeps deliveries of one domain in the order their causes happened, and lets tests await them. */
export class DeliveryQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private failures: unknown[] = [];

  push(send: () => Promise<unknown>): void {
    this.tail = this.tail.then(send).catch((err) => {
      // A failing webhook endpoint must not break the hub's own state machine; the core
      // records the failed delivery, we only keep the error for inspection.
      this.failures.push(err);
    });
  }

  idle(): Promise<void> {
    return this.tail.then(() => undefined);
  }

  get errors(): readonly unknown[] {
    return this.failures;
  }
}

export function userSender(hub: Hub, login: string): Record<string, unknown> {
  return hub.userJson(login);
}
