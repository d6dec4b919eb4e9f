// App, installation, organisation and repository routes (document 001 section B, document 000 repository lists).
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import { HubError, type HubRequest, type Installation } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { appJson } from "./app-json.js";

function requireInstallation(hub: SandboxHub, id: string): Installation {
  const inst = hub.accounts.installations.get(Number(id));
  if (!inst || inst.app_id !== hub.appId) throw notFound();
  return inst;
}

/** Narrow the installation's permissions to the ones asked for; asking for more is 422. */
function narrowPermissions(inst: Installation, asked: unknown): Record<string, "read" | "write"> {
  if (asked === undefined || asked === null) return { ...inst.permissions };
  if (typeof asked !== "object") throw validationFailed("Installation", "permissions", "invalid");
  const out: Record<string, "read" | "write"> = {};
  for (const [k, v] of Object.entries(asked as Record<string, unknown>)) {
    const have = inst.permissions[k];
    if (v !== "read" && v !== "write") throw validationFailed("Installation", `permissions.${k}`, "invalid");
    if (!have || (v === "write" && have !== "write")) {
      throw new HubError(422, `The permissions requested are not granted to this installation.`);
    }
    out[k] = v;
  }
  return out;
}

export function installAccountRoutes(hub: SandboxHub, router: RouteTable): void {
  router.add(
    "GET",
    "/",
    (req) => ({
      status: 200,
      body: {
        current_user_url: `${req.baseUrl}/user`,
        installation_repositories_url: `${req.baseUrl}/installation/repositories`,
        organization_url: `${req.baseUrl}/orgs/{org}`,
        organization_repositories_url: `${req.baseUrl}/orgs/{org}/repos{?type,page,per_page,sort}`,
        repository_url: `${req.baseUrl}/repos/{owner}/{repo}`,
        rate_limit_url: `${req.baseUrl}/rate_limit`,
        user_url: `${req.baseUrl}/users/{user}`,
      },
    }),
    { auth: "none" },
  );

  router.add(
    "GET",
    "/rate_limit",
    (req) => {
      const key =
        req.auth.kind === "installation"
          ? `installation:${req.auth.installationId}`
          : req.auth.kind === "app"
            ? `app:${req.auth.appId}`
            : req.auth.kind === "user"
              ? `user:${req.auth.login}`
              : undefined;
      const b = key ? hub.rateLimiter.bucket(key, hub.now()) : undefined;
      const core = b
        ? {
            limit: b.limit,
            used: b.used,
            remaining: Math.max(0, b.limit - b.used),
            reset: Math.floor(b.resetAt.getTime() / 1000),
          }
        : { limit: 60, used: 0, remaining: 60, reset: Math.floor(hub.now().getTime() / 1000) + 3600 };
      return { status: 200, body: { resources: { core }, rate: core } };
    },
    { auth: "none" },
  );

  // ---- the app (JWT) ----
  router.add("GET", "/app", () => ({ status: 200, body: appJson(hub) }), { auth: "app" });
  router.add(
    "GET",
    "/app/installations",
    (req) =>
      hub.paginate(
        req,
        [...hub.accounts.installations.values()].map((i) => hub.installationJson(i)),
      ),
    { auth: "app" },
  );
  router.add(
    "GET",
    "/app/installations/{installation_id}",
    (req) => ({ status: 200, body: hub.installationJson(requireInstallation(hub, req.params.installation_id!)) }),
    { auth: "app" },
  );
  router.add(
    "GET",
    "/orgs/{org}/installation",
    (req) => {
      const inst = hub.accounts.installationOn(req.params.org!);
      if (!inst || !hub.org(req.params.org!)) throw notFound();
      return { status: 200, body: hub.installationJson(inst) };
    },
    { auth: "app" },
  );
  router.add(
    "GET",
    "/users/{username}/installation",
    (req) => {
      const inst = hub.accounts.installationOn(req.params.username!);
      if (!inst || !hub.user(req.params.username!)) throw notFound();
      return { status: 200, body: hub.installationJson(inst) };
    },
    { auth: "app" },
  );
  router.add(
    "GET",
    "/repos/{owner}/{repo}/installation",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const inst = hub.installationFor(repo);
      if (!inst) throw notFound();
      return { status: 200, body: hub.installationJson(inst) };
    },
    { auth: "app" },
  );

  router.add(
    "POST",
    "/app/installations/{installation_id}/access_tokens",
    (req) => {
      const inst = requireInstallation(hub, req.params.installation_id!);
      if (inst.suspended_at) throw new HubError(403, "This installation has been suspended");
      const body = req.body ?? {};
      const permissions = narrowPermissions(inst, body.permissions);
      let repositoryIds: number[] | undefined;
      if (body.repositories !== undefined || body.repository_ids !== undefined) {
        const names = Array.isArray(body.repositories) ? (body.repositories as unknown[]) : [];
        const ids = Array.isArray(body.repository_ids) ? (body.repository_ids as unknown[]) : [];
        repositoryIds = [];
        for (const n of names) {
          const repo = typeof n === "string" ? hub.accounts.repoByName(inst.account, n) : undefined;
          if (!repo || !hub.accounts.reaches(inst, repo))
            throw new HubError(
              422,
              `There is at least one repository that does not exist or is not accessible to the parent installation.`,
            );
          repositoryIds.push(repo.id);
        }
        for (const id of ids) {
          const repo = typeof id === "number" ? hub.repoById(id) : undefined;
          if (!repo || !hub.accounts.reaches(inst, repo))
            throw new HubError(
              422,
              `There is at least one repository that does not exist or is not accessible to the parent installation.`,
            );
          repositoryIds.push(repo.id);
        }
      }
      // GitHub's opt-in header for the new format during its roll-out; the hub option makes it the default.
      const stateless = hub.tokenFormat === "stateless" || req.headers["x-github-stateless-s2s-token"] === "enabled";
      const token = hub.tokens.issueInstallationToken(
        {
          installationId: inst.id,
          expiresAt: new Date(hub.now().getTime() + hub.tokenTtlMs),
          permissions,
          repositoryIds,
        },
        stateless ? "stateless" : "classic",
        hub.appId,
      );
      const out: Record<string, unknown> = {
        token: token.token,
        expires_at: hub.timestamp(token.expiresAt),
        permissions,
        repository_selection: repositoryIds ? "selected" : inst.repository_selection,
      };
      if (repositoryIds) out.repositories = repositoryIds.map((id) => hub.repoJson(hub.repoById(id)!));
      return { status: 201, body: out };
    },
    { auth: "app" },
  );

  const setSuspended = (req: HubRequest, suspended: boolean) => {
    const inst = requireInstallation(hub, req.params.installation_id!);
    inst.suspended_at = suspended ? hub.timestamp() : null;
    hub.effect(suspended ? "installation.suspended" : "installation.unsuspended", { installation_id: inst.id });
    return { status: 204 };
  };
  router.add("PUT", "/app/installations/{installation_id}/suspended", (req) => setSuspended(req, true), {
    auth: "app",
  });
  router.add("DELETE", "/app/installations/{installation_id}/suspended", (req) => setSuspended(req, false), {
    auth: "app",
  });

  // ---- the installation (token) ----
  router.add("GET", "/installation/repositories", (req) => {
    const inst = hub.installationOf(req)!;
    const repos = hub.accounts.reposOfInstallation(inst).filter((r) => hub.canSee(req, r));
    const page = hub.paginate(
      req,
      repos.map((r) => hub.repoJson(r)),
      { wrap: "repositories" },
    );
    (page.body as Record<string, unknown>).repository_selection = inst.repository_selection;
    return page;
  });
  router.add("DELETE", "/installation/token", (req) => {
    if (req.auth.kind === "installation") hub.tokens.revoke(req.auth.token);
    return { status: 204 };
  });

  // ---- accounts and repositories ----
  router.add(
    "GET",
    "/user",
    (req) => {
      if (req.auth.kind !== "user") throw new HubError(403, "Resource not accessible by integration");
      return { status: 200, body: hub.userJson(req.auth.login) };
    },
    { auth: "user" },
  );
  router.add(
    "GET",
    "/users/{username}",
    (req) => {
      if (!hub.accounts.account(req.params.username!)) throw notFound();
      return { status: 200, body: hub.userJson(req.params.username!) };
    },
    { auth: "none" },
  );
  router.add(
    "GET",
    "/orgs/{org}",
    (req) => {
      const org = hub.org(req.params.org!);
      if (!org) throw notFound();
      return { status: 200, body: hub.orgJson(org.login) };
    },
    { auth: "none" },
  );
  router.add(
    "GET",
    "/orgs/{org}/repos",
    (req) => {
      const org = hub.org(req.params.org!);
      if (!org) throw notFound();
      const type = req.query.get("type") ?? "all";
      const sort = req.query.get("sort") ?? "created";
      const direction = req.query.get("direction") ?? (sort === "full_name" ? "asc" : "desc");
      let repos = hub.reposOf(org.login).filter((r) => hub.canSee(req, r));
      if (type === "public") repos = repos.filter((r) => !r.private);
      else if (type === "private") repos = repos.filter((r) => r.private);
      else if (type === "forks") repos = repos.filter((r) => r.fork);
      else if (type === "sources") repos = repos.filter((r) => !r.fork);
      const key = (r: (typeof repos)[number]): string | number =>
        sort === "full_name"
          ? `${r.owner}/${r.name}`.toLowerCase()
          : sort === "created"
            ? r.id
            : sort === "pushed"
              ? r.pushed_at
              : r.updated_at;
      repos.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
      if (direction === "desc") repos.reverse();
      return hub.paginate(
        req,
        repos.map((r) => hub.repoJson(r)),
      );
    },
    { auth: "none" },
  );
  router.add(
    "GET",
    "/repos/{owner}/{repo}",
    (req) => ({ status: 200, body: hub.repoJson(hub.requireRepo(req, req.params.owner!, req.params.repo!)) }),
    { auth: "none" },
  );
}
