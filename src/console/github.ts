// The console's calls to GitHub as the signed-in person (user-to-server token): the token
// exchange of the web flow, and what decides what the person may see. Plain fetch: a few
// GETs at sign-in do not need the app's throttled Octokit.

/** Pages followed at most per list (100 items each). */
const MAX_PAGES = 10;
const TIMEOUT_MS = 10_000;

export interface Access {
  login: string;
  /** Full names (as GitHub spells them) of the repositories the person can access through this app's installations. */
  repositories: string[];
  /** Installation ids of this app the person can reach. */
  installations: number[];
  /** Organisations (lower case) whose owner (membership role `admin`) the person is. */
  ownerOf: string[];
  /**
   * Per installation of this app the person can reach: its account, whether the person owns that
   * account (an organisation's owner, or the personal account itself), and the repositories of it
   * the person can access. Every decision about a delivery is taken against its own installation here.
   */
  grants: InstallationGrant[];
}

export interface InstallationGrant {
  id: number;
  /** The account's login, lower case. */
  account: string;
  owner: boolean;
  repositories: string[];
}

export class GitHubError extends Error {}

/** github.com's web host for api.github.com; GHES serves both on one host (`/api/v3`); the sandbox on its base. */
export function webBaseOf(apiUrl: string): string {
  if (apiUrl === "https://api.github.com") return "https://github.com";
  return apiUrl.replace(/\/api\/v3$/, "");
}

async function call(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: "manual" });
  } catch {
    throw new GitHubError(`GitHub did not answer (${new URL(url).pathname})`);
  }
}

export async function exchangeCode(opts: {
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  code: string;
  redirectUri: string;
}): Promise<string> {
  const res = await call(`${webBaseOf(opts.apiUrl)}/login/oauth/access_token`, {
    method: "POST",
    headers: { accept: "application/json", "content-type": "application/json", "user-agent": "steward-console" },
    body: JSON.stringify({
      client_id: opts.clientId,
      client_secret: opts.clientSecret,
      code: opts.code,
      redirect_uri: opts.redirectUri,
    }),
  });
  const body = (await res.json().catch(() => ({}))) as { access_token?: unknown; error?: unknown };
  if (!res.ok || typeof body.access_token !== "string") {
    throw new GitHubError(`sign-in failed: ${typeof body.error === "string" ? body.error : `HTTP ${res.status}`}`);
  }
  return body.access_token;
}

function nextLink(link: string | null): string | undefined {
  return link
    ?.split(",")
    .map((l) => /<([^>]+)>;\s*rel="next"/.exec(l)?.[1])
    .find((u) => u !== undefined);
}

export function userClient(apiUrl: string, token: string) {
  const headers = {
    accept: "application/vnd.github+json",
    authorization: `Bearer ${token}`,
    "x-github-api-version": "2022-11-28",
    "user-agent": "steward-console",
  };
  async function get<T>(path: string): Promise<{ status: number; body: T; link: string | null }> {
    const res = await call(path.startsWith("http") ? path : `${apiUrl}${path}`, { headers });
    const body = (await res.json().catch(() => undefined)) as T;
    return { status: res.status, body, link: res.headers.get("link") };
  }
  async function list<T>(path: string, key: string): Promise<T[]> {
    const out: T[] = [];
    let url: string | undefined = `${apiUrl}${path}${path.includes("?") ? "&" : "?"}per_page=100`;
    for (let page = 0; url && page < MAX_PAGES; page++) {
      const res: { status: number; body: Record<string, T[]>; link: string | null } =
        await get<Record<string, T[]>>(url);
      if (res.status !== 200) throw new GitHubError(`GitHub answered ${res.status} to ${new URL(url).pathname}`);
      out.push(...(res.body[key] ?? []));
      url = nextLink(res.link);
    }
    return out;
  }

  return {
    async access(appId: number): Promise<Access> {
      const user = await get<{ login?: string }>("/user");
      if (user.status !== 200 || typeof user.body?.login !== "string")
        throw new GitHubError(`GitHub answered ${user.status} to /user`);
      type Inst = { id: number; app_id: number; account: { login: string; type: string } | null };
      const installations = (await list<Inst>("/user/installations", "installations")).filter(
        (i) => i.app_id === appId,
      );
      const login = user.body.login;
      const repositories: string[] = [];
      const ownerOf: string[] = [];
      const grants: InstallationGrant[] = [];
      for (const inst of installations) {
        const repos = (
          await list<{ full_name: string }>(`/user/installations/${inst.id}/repositories`, "repositories")
        ).map((r) => r.full_name);
        repositories.push(...repos);
        let owner = false;
        if (inst.account?.type === "Organization") {
          const m = await get<{ role?: string; state?: string }>(
            `/user/memberships/orgs/${encodeURIComponent(inst.account.login)}`,
          );
          owner = m.status === 200 && m.body?.role === "admin" && m.body.state === "active";
          if (owner) ownerOf.push(inst.account.login.toLowerCase());
        } else if (inst.account?.type === "User") {
          owner = inst.account.login.toLowerCase() === login.toLowerCase();
        }
        grants.push({ id: inst.id, account: (inst.account?.login ?? "").toLowerCase(), owner, repositories: repos });
      }
      return { login, repositories, installations: installations.map((i) => i.id), ownerOf, grants };
    },
  };
}
