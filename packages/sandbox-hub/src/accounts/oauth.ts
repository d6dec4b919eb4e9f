// The web flow of a GitHub App's user sign-in (OAuth): authorize (a page to choose a sandbox
// user instead of a password), code for token, and the user-to-server routes that tell
// an app what the signed-in person may see: their installations, repositories, memberships.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { notFound } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import { HubError, type HubRequest, type HubResponse, type Installation } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";

/** GitHub's codes expire after 10 minutes and work once. */
const CODE_TTL_MS = 10 * 60 * 1000;
/** Bound on codes issued and not yet exchanged (a page reloaded in a loop must not grow memory). */
const MAX_PENDING_CODES = 1_000;

interface PendingCode {
  login: string;
  clientId: string;
  redirectUri: string | undefined;
  expiresAt: number;
}

export interface OAuthClient {
  clientId: string;
  /** A secret: never logged or shown. */
  clientSecret: string;
}

/** The app's client id, as `GET /app` shows it. */
export function clientIdOf(appId: number): string {
  return `Iv1.${createHash("sha1").update(String(appId)).digest("hex").slice(0, 16)}`;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** GitHub answers token errors with 200 and an `error` field, not an HTTP error. */
function tokenError(error: string, description: string) {
  return {
    status: 200,
    body: {
      error,
      error_description: description,
      error_uri:
        "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors",
    },
  };
}

export function installOAuthRoutes(hub: SandboxHub, router: RouteTable): OAuthClient {
  const client: OAuthClient = { clientId: clientIdOf(hub.appId), clientSecret: randomBytes(20).toString("hex") };
  const codes = new Map<string, PendingCode>();

  const dropExpired = () => {
    const now = Date.now();
    for (const [code, p] of codes) if (p.expiresAt <= now) codes.delete(code);
  };

  // The sign-in page: GitHub shows a password form and a consent; the sandbox lets you pick who you are.
  router.add(
    "GET",
    "/login/oauth/authorize",
    (req): HubResponse => {
      const clientId = req.query.get("client_id") ?? "";
      if (clientId !== client.clientId) {
        return {
          status: 404,
          raw: "<!doctype html><title>Not Found</title><p>No application with this client_id.</p>",
          headers: { "Content-Type": "text/html; charset=utf-8" },
        };
      }
      const redirectUri = req.query.get("redirect_uri") ?? undefined;
      const state = req.query.get("state") ?? "";
      const login = req.query.get("login");
      if (login) {
        if (!hub.user(login)) throw notFound();
        if (!redirectUri) throw new HubError(422, "redirect_uri is required by the sandbox");
        dropExpired();
        if (codes.size >= MAX_PENDING_CODES) throw new HubError(429, "Too many sign-ins in progress");
        const code = randomBytes(10).toString("hex");
        codes.set(code, { login: hub.user(login)!.login, clientId, redirectUri, expiresAt: Date.now() + CODE_TTL_MS });
        const target = new URL(redirectUri);
        target.searchParams.set("code", code);
        if (state) target.searchParams.set("state", state);
        return { status: 302, headers: { Location: target.toString(), "Cache-Control": "no-store" } };
      }
      const users = [...hub.accounts.users.values()].filter((u) => u.type === "User");
      const choice = (l: string) => {
        const q = new URLSearchParams(req.query);
        q.set("login", l);
        return `<li><a href="/login/oauth/authorize?${escapeHtml(q.toString())}">Sign in as ${escapeHtml(l)}</a></li>`;
      };
      const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in to ${escapeHtml(hub.appName)} (sandbox)</title></head>
<body><main><h1>Authorize ${escapeHtml(hub.appName)}</h1>
<p>This is the sandbox hub: choose who you are. ${escapeHtml(hub.appName)} will learn your login, installations, repositories and organisation memberships.</p>
<ul>${users.map((u) => choice(u.login)).join("")}</ul></main></body></html>`;
      return {
        status: 200,
        raw: html,
        headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" },
      };
    },
    { auth: "none" },
  );

  router.add(
    "POST",
    "/login/oauth/access_token",
    (req) => {
      const body = req.body ?? {};
      const str = (k: string) => (typeof body[k] === "string" ? (body[k] as string) : (req.query.get(k) ?? ""));
      if (str("client_id") !== client.clientId || !sameSecret(str("client_secret"), client.clientSecret)) {
        return tokenError("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.");
      }
      const code = str("code");
      const pending = codes.get(code);
      codes.delete(code);
      if (!pending || pending.expiresAt <= Date.now() || pending.clientId !== client.clientId) {
        return tokenError("bad_verification_code", "The code passed is incorrect or expired.");
      }
      const redirectUri = str("redirect_uri");
      if (redirectUri && redirectUri !== pending.redirectUri) {
        return tokenError(
          "redirect_uri_mismatch",
          "The redirect_uri MUST match the registered callback URL for this application.",
        );
      }
      const token = hub.tokens.issueUserToServerToken(pending.login);
      return {
        status: 200,
        body: { access_token: token, token_type: "bearer", scope: "" },
        headers: { "Cache-Control": "no-store" },
      };
    },
    { auth: "none" },
  );

  const userLogin = (req: HubRequest): string => {
    if (req.auth.kind !== "user") throw new HubError(403, "Resource not accessible by integration");
    return req.auth.login;
  };
  /** Installations of this app on accounts the user belongs to (their own, or an organisation they are a member of). */
  const installationsOf = (login: string): Installation[] =>
    [...hub.accounts.installations.values()].filter(
      (i) =>
        i.app_id === hub.appId &&
        (i.account.toLowerCase() === login.toLowerCase() || hub.accounts.isMember(i.account, login)),
    );

  router.add(
    "GET",
    "/user/installations",
    (req) => {
      const login = userLogin(req);
      return hub.paginate(
        req,
        installationsOf(login).map((i) => hub.installationJson(i)),
        { wrap: "installations" },
      );
    },
    { auth: "user" },
  );

  router.add(
    "GET",
    "/user/installations/{installation_id}/repositories",
    (req) => {
      const login = userLogin(req);
      const inst = installationsOf(login).find((i) => String(i.id) === req.params.installation_id);
      if (!inst) throw notFound();
      const repos = hub.accounts.reposOfInstallation(inst).filter((r) => hub.accounts.userReaches(r, login));
      const page = hub.paginate(
        req,
        repos.map((r) => hub.repoJson(r)),
        { wrap: "repositories" },
      );
      (page.body as Record<string, unknown>).repository_selection = inst.repository_selection;
      return page;
    },
    { auth: "user" },
  );

  router.add(
    "GET",
    "/user/memberships/orgs/{org}",
    (req) => {
      const login = userLogin(req);
      const org = hub.accounts.org(req.params.org!);
      if (!org || !hub.accounts.isMember(org.login, login)) throw notFound();
      return {
        status: 200,
        body: {
          url: `${req.baseUrl}/orgs/${org.login}/memberships/${login}`,
          state: "active",
          role: hub.accounts.isOwner(org.login, login) ? "admin" : "member",
          organization_url: `${req.baseUrl}/orgs/${org.login}`,
          organization: hub.orgJson(org.login),
          user: hub.userJson(login),
        },
      };
    },
    { auth: "user" },
  );

  return client;
}
