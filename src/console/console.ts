// The console's HTTP surface: sign-in through the app's OAuth client, sessions, CSRF, and
// the routing of /console/* to pages. Mounted by the service server beside the webhook path.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody } from "../intake/body.js";
import { safeErrorMessage } from "../log/redact.js";
import { exchangeCode, userClient, webBaseOf, type Access } from "./github.js";
import { frame, html, type PageOut, type Viewer } from "./html.js";
import { cookie, createSealer, readCookies } from "./session.js";
import type { ConsoleDeps, PageContext } from "./types.js";
import { overviewPage } from "./pages/overview.js";
import { deliveriesPage } from "./pages/deliveries.js";
import { deliveryPage } from "./pages/delivery.js";
import { deadPage, replayAction } from "./pages/dead.js";
import { deploymentsPage } from "./pages/deployments.js";
import { secretsPage } from "./pages/secrets.js";
import { policyPage } from "./pages/policy.js";
import { flakesPage } from "./pages/flakes.js";
import { liveStream } from "./live.js";

const SESSION_COOKIE = "steward_session";
const SIGNIN_COOKIE = "steward_signin";
const SESSION_TTL_MS = 8 * 3_600_000;
const SIGNIN_TTL_MS = 10 * 60_000;
/** What a person may see is asked of GitHub again after this long. */
const ACCESS_TTL_MS = 5 * 60_000;
const MAX_CACHED_ACCESS = 1_000;
const MAX_FORM_BYTES = 16 * 1024;

interface Session {
  sid: string;
  login: string;
  /** The user-to-server token: only ever inside the sealed cookie and server memory. */
  token: string;
  csrf: string;
}

export interface ConsoleRoutes {
  /** Whether the path is the console's. */
  owns(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** End live streams (shutdown). */
  close(): void;
}

type Page = (ctx: PageContext) => Promise<PageOut>;

const pages: { pattern: RegExp; page: Page; ownersOnly?: boolean }[] = [
  { pattern: /^\/console\/?$/, page: overviewPage },
  { pattern: /^\/console\/deliveries\/?$/, page: deliveriesPage },
  { pattern: /^\/console\/deliveries\/[^/]+$/, page: deliveryPage },
  { pattern: /^\/console\/dead\/?$/, page: deadPage, ownersOnly: true },
  { pattern: /^\/console\/deployments\/?$/, page: deploymentsPage },
  { pattern: /^\/console\/flakes\/?$/, page: flakesPage },
  { pattern: /^\/console\/secrets\/?$/, page: secretsPage, ownersOnly: true },
  { pattern: /^\/console\/policies\/[^/]+\/[^/]+$/, page: policyPage },
];

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Only same-site paths after sign-in: never an open redirect. */
function safeReturn(path: string | null | undefined): string {
  return path && /^\/console(\/[^\s\\]*)?$/.test(path) && !path.startsWith("//") ? path : "/console";
}

export function createConsole(deps: ConsoleDeps): ConsoleRoutes {
  const log = deps.logger.child({ component: "console" });
  const sealer = createSealer(deps.sessionSecret);
  const accessCache = new Map<string, { access: Access; at: number }>();
  const live = liveStream(deps);

  function secure(): boolean {
    return deps.baseUrl().startsWith("https:");
  }

  function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}, nonce?: string): void {
    res.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "content-length": Buffer.byteLength(body),
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "x-frame-options": "DENY",
      "referrer-policy": "same-origin",
      "content-security-policy": `default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'${nonce ? `; script-src 'nonce-${nonce}'` : ""}`,
      ...headers,
    });
    res.end(body);
  }

  function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
    res.writeHead(303, { location, "cache-control": "no-store", ...(cookies.length ? { "set-cookie": cookies } : {}), "content-length": 0 });
    res.end();
  }

  function renderPage(res: ServerResponse, page: PageOut, viewer: Viewer | undefined): void {
    const nonce = randomBytes(16).toString("base64");
    send(res, page.status ?? 200, frame(page, viewer, nonce), {}, nonce);
  }

  function sessionOf(req: IncomingMessage): Session | undefined {
    return sealer.open<Session>(readCookies(req.headers.cookie).get(SESSION_COOKIE), SESSION_COOKIE);
  }

  async function accessOf(session: Session): Promise<Access> {
    const cached = accessCache.get(session.sid);
    if (cached && Date.now() - cached.at < ACCESS_TTL_MS) return cached.access;
    const access = await userClient(deps.apiUrl, session.token).access(deps.appId);
    if (accessCache.size >= MAX_CACHED_ACCESS) accessCache.delete(accessCache.keys().next().value!);
    accessCache.set(session.sid, { access, at: Date.now() });
    return access;
  }

  function offPage(res: ServerResponse, status: number): void {
    renderPage(res, {
      status,
      title: "Console is off",
      body: html`<p>The console is off: Steward has no OAuth client to sign people in with.</p>
        <p>Set <code>GITHUB_CLIENT_ID</code> and <code>GITHUB_CLIENT_SECRET</code> (the GitHub App's client id and a client secret,
        written by the manifest flow) and restart Steward. See the README's Console section.</p>`,
    }, undefined);
  }

  async function signIn(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const state = randomBytes(16).toString("base64url");
    const back = safeReturn(url.searchParams.get("next"));
    const sealed = sealer.seal({ state, back }, SIGNIN_COOKIE, SIGNIN_TTL_MS);
    const authorize = new URL(`${webBaseOf(deps.apiUrl)}/login/oauth/authorize`);
    authorize.searchParams.set("client_id", deps.oauth!.clientId);
    authorize.searchParams.set("redirect_uri", `${deps.baseUrl()}/console/callback`);
    authorize.searchParams.set("state", state);
    redirect(res, authorize.toString(), [cookie(SIGNIN_COOKIE, sealed, { maxAgeSeconds: SIGNIN_TTL_MS / 1000, secure: secure(), path: "/console" })]);
  }

  async function callback(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const pending = sealer.open<{ state: string; back: string }>(readCookies(req.headers.cookie).get(SIGNIN_COOKIE), SIGNIN_COOKIE);
    const state = url.searchParams.get("state") ?? "";
    const code = url.searchParams.get("code") ?? "";
    const clear = cookie(SIGNIN_COOKIE, "", { maxAgeSeconds: 0, secure: secure(), path: "/console" });
    if (!pending || !code || !sameText(state, pending.state)) {
      res.setHeader("set-cookie", clear);
      renderPage(res, { status: 400, title: "Sign-in failed", body: html`<p>This sign-in expired or did not start here. <a href="/console/login">Sign in again</a>.</p>` }, undefined);
      return;
    }
    try {
      const token = await exchangeCode({ apiUrl: deps.apiUrl, ...deps.oauth!, code, redirectUri: `${deps.baseUrl()}/console/callback` });
      const sid = randomBytes(16).toString("base64url");
      const access = await userClient(deps.apiUrl, token).access(deps.appId);
      accessCache.set(sid, { access, at: Date.now() });
      const session: Session = { sid, login: access.login, token, csrf: randomBytes(24).toString("base64url") };
      const sealed = sealer.seal(session, SESSION_COOKIE, SESSION_TTL_MS);
      log.info({ login: access.login, repositories: access.repositories.length, owner: access.ownerOf.length > 0 }, "console sign-in");
      redirect(res, pending.back, [clear, cookie(SESSION_COOKIE, sealed, { maxAgeSeconds: SESSION_TTL_MS / 1000, secure: secure() })]);
    } catch (error) {
      log.warn({ error: safeErrorMessage(error) }, "console sign-in failed");
      res.setHeader("set-cookie", clear);
      renderPage(res, { status: 502, title: "Sign-in failed", body: html`<p>GitHub did not complete the sign-in. <a href="/console/login">Try again</a>.</p>` }, undefined);
    }
  }

  /** A POST's form, after its CSRF token and origin were checked; undefined when refused (answered). */
  async function checkedForm(req: IncomingMessage, res: ServerResponse, session: Session): Promise<URLSearchParams | undefined> {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== "null" && origin !== new URL(deps.baseUrl()).origin) {
      send(res, 403, "<!doctype html><title>Forbidden</title><p>Cross-site request refused.</p>");
      return undefined;
    }
    const body = await readBody(req, MAX_FORM_BYTES);
    if (!body.ok) {
      send(res, 413, "<!doctype html><title>Too large</title><p>Form too large.</p>", { connection: "close" });
      return undefined;
    }
    const form = new URLSearchParams(body.body.toString("utf8"));
    if (!sameText(form.get("csrf") ?? "", session.csrf)) {
      send(res, 403, "<!doctype html><title>Forbidden</title><p>The form expired or did not come from this console. Reload the page and try again.</p>");
      return undefined;
    }
    return form;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://console.invalid");
    const path = url.pathname;
    const method = req.method ?? "GET";
    if (path === "/") return redirect(res, "/console");
    if (path === "/steward.schema.json") {
      res.writeHead(200, { "content-type": "application/schema+json", "content-length": Buffer.byteLength(deps.schemaJson), "cache-control": "public, max-age=300", "access-control-allow-origin": "*" });
      res.end(method === "HEAD" ? undefined : deps.schemaJson);
      return;
    }
    if (!deps.oauth) return offPage(res, path === "/console" || path === "/console/" ? 200 : 404);
    if (path === "/console/login" && method === "GET") return signIn(req, res, url);
    if (path === "/console/callback" && method === "GET") return callback(req, res, url);

    const session = sessionOf(req);
    if (path === "/console/logout" && method === "POST") {
      if (session && !(await checkedForm(req, res, session))) return;
      if (session) accessCache.delete(session.sid);
      return redirect(res, "/console", [cookie(SESSION_COOKIE, "", { maxAgeSeconds: 0, secure: secure() })]);
    }
    if (!session) {
      if (method !== "GET" && method !== "HEAD") {
        send(res, 403, "<!doctype html><title>Forbidden</title><p>Sign in first.</p>");
        return;
      }
      if (path === "/console" || path === "/console/") {
        return renderPage(res, { title: "Console", body: html`<p>Steward's console shows what Steward decided and why, for the repositories you can access.</p>
          <p><a href="/console/login">Sign in with GitHub</a></p>` }, undefined);
      }
      return redirect(res, `/console/login?next=${encodeURIComponent(path + url.search)}`);
    }

    let access: Access;
    try {
      access = await accessOf(session);
    } catch (error) {
      log.warn({ error: safeErrorMessage(error) }, "console could not ask GitHub what the user may see");
      return renderPage(res, { status: 502, title: "GitHub unavailable", body: html`<p>GitHub did not say what you may see; try again shortly, or <a href="/console/login">sign in again</a>.</p>` }, undefined);
    }
    const viewer: Viewer = { login: access.login, owner: access.ownerOf.length > 0, csrf: session.csrf };
    const ctx: PageContext = { viewer, access, scope: access.repositories, url, deps };

    if (path === "/console/events" && method === "GET") return live.serve(req, res, ctx);
    if (method === "POST" && (path === "/console/dead/replay" || /^\/console\/deliveries\/[^/]+\/replay$/.test(path))) {
      const form = await checkedForm(req, res, session);
      if (!form) return;
      if (!viewer.owner) {
        return renderPage(res, { status: 403, title: "Not allowed", body: html`<p>Only organisation owners replay deliveries.</p>` }, viewer);
      }
      const done = await replayAction(ctx, form);
      return redirect(res, done);
    }
    if (method !== "GET" && method !== "HEAD") {
      send(res, 405, "<!doctype html><title>Method not allowed</title><p>Method not allowed.</p>", { allow: "GET, HEAD" });
      return;
    }
    const route = pages.find((p) => p.pattern.test(path));
    if (!route) return renderPage(res, { status: 404, title: "Not found", body: html`<p>No such page.</p>` }, viewer);
    if (route.ownersOnly && !viewer.owner) {
      return renderPage(res, { status: 403, title: "Owners only", body: html`<p>This page is for organisation owners.</p>` }, viewer);
    }
    renderPage(res, await route.page(ctx), viewer);
  }

  return {
    owns: (path) => path === "/" || path === "/steward.schema.json" || path === "/console" || path.startsWith("/console/"),
    handle,
    close: () => live.close(),
  };
}
